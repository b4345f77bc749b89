"""``plan ... --share``: store the plan on the configured server and return its page's URL.

The server is the ``[server]`` of the configuration (``public_url``, else
``http://host:port``); the plan goes to its ``POST /api/v1/shared-plans`` with
the configured ``api_token`` as a bearer token, with the standard library only.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Final

from tracker.errors import UsageError
from tracker.settings import Settings

if TYPE_CHECKING:
    from estimator import Plan

PATH: Final = "/api/v1/shared-plans"
TIMEOUT_S: Final = 30.0


def server_url(settings: Settings) -> str:
    """The base URL plans are shared to: ``[server] public_url``, else host and port."""
    daemon = settings.daemon
    return (daemon.public_url or f"http://{daemon.host}:{daemon.port}").rstrip("/")


def share(plan: Plan, settings: Settings) -> str:
    """The URL of the stored plan's page; a UsageError (one line) when the server refuses."""
    base = server_url(settings)
    token = settings.daemon.api_token
    if token is None:
        raise UsageError(
            "--share needs the server's api_token ([server] api_token or NEURARCH_API_TOKEN)"
        )
    request = urllib.request.Request(
        base + PATH,
        data=json.dumps(plan.to_json()).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        raise UsageError(f"{base} refused the plan: HTTP {exc.code} {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise UsageError(f"could not share the plan with {base}: {exc}") from None
    url = answer.get("url") if isinstance(answer, dict) else None
    if not isinstance(url, str):
        raise UsageError(f"{base} answered without a plan URL")
    return url


__all__ = ["server_url", "share"]
