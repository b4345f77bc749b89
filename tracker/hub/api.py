"""The one huggingface_hub client object: where the Hub is, who asks, and as what.

Every Hub call the tracker makes goes through the ``HfApi`` that ``connect``
builds from the settings' ``hub`` section, so the endpoint, the token and the
user agent are set in one place: ``Hub``, ``HeadProbe``, ``Discovery`` and the
plan source are handed it and build none of their own. Without a token in the
settings the token is huggingface_hub's to find, as the library does
(``HF_TOKEN``, the file ``HF_TOKEN_PATH`` names, or ``$HF_HOME/token`` that
``hf auth login`` writes): ``None`` goes through, never ``False``, which would
turn that lookup off.

That lookup reads the token file and rebuilds the user agent on each call (about 40-70
microseconds, four times per revision), so ``RequestHeaders`` keeps its answer for
``HEADERS_TTL_S``: a token saved or refreshed while the daemon runs is sent within that time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Final, Protocol

from huggingface_hub import HfApi
from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]  # lazily exported

LIBRARY = "neurarch-trace"
"""The name our requests carry in their User-Agent, beside huggingface_hub's own."""
HEADERS_TTL_S: Final = 30.0
"""How long the token and user agent huggingface_hub resolved are sent before it is asked
again: well inside the minutes before an OAuth token's expiry that ``get_token`` refreshes at."""


class HubAccess(Protocol):
    """Where the Hub is and who asks: ``tracker.settings.HubSettings`` is one."""

    @property
    def endpoint(self) -> str:
        """The Hub's base URL (``HF_ENDPOINT``), without a trailing slash."""
        ...

    @property
    def token(self) -> str | None:
        """The token to send; None leaves huggingface_hub's own lookup (saved token, HF_TOKEN) to it."""
        ...


def connect(access: HubAccess) -> HfApi:
    """The client every Hub call of this process goes through."""
    return HfApi(
        endpoint=access.endpoint.rstrip("/"),
        token=access.token,
        library_name=LIBRARY,
        library_version=_installed_version(),
    )


def request_headers(api: HfApi, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The headers ``api``'s own calls send (token, user agent), for requests made beside it."""
    headers: dict[str, str] = build_hf_headers(
        token=api.token,
        library_name=api.library_name,
        library_version=api.library_version,
        user_agent=api.user_agent,
        headers=api.headers,
    )
    headers.update(extra or {})
    return headers


class RequestHeaders:
    """``request_headers(api)``, resolved at most once per ``ttl`` seconds.

    Shared by the check threads without a lock: the resolved pair is replaced whole, and two
    threads that find it stale at once both resolve it, to the same answer.
    """

    def __init__(
        self,
        api: HfApi,
        *,
        ttl: float = HEADERS_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._ttl = ttl
        self._clock = clock
        self._resolved: tuple[float, dict[str, str]] | None = None

    def __call__(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """A fresh dict of the headers, with ``extra`` added (the caller may change it)."""
        now = self._clock()
        resolved = self._resolved
        if resolved is None or now - resolved[0] >= self._ttl:
            resolved = self._resolved = (now, request_headers(self._api))
        headers = dict(resolved[1])
        headers.update(extra or {})
        return headers


def _installed_version() -> str:
    try:
        return version(LIBRARY)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


__all__ = ["HEADERS_TTL_S", "LIBRARY", "HubAccess", "RequestHeaders", "connect", "request_headers"]
