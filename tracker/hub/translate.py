"""huggingface_hub's and the transport's exceptions as our ``HubError`` tree, in one place.

Every Hub call (``Hub``, ``HeadProbe``, ``Discovery``, the plan source) runs
inside ``translate_hub_errors``, so one answer means one error wherever it
came from. The Hub's own error codes (``X-Error-Code``, read by
huggingface_hub into its exception classes) decide first; an answer without
one is mapped by its status:

======================  ==============================================
401, 403, gated         ``Gated``: a token with access is needed
404, repo/revision/file ``RepoGone``, ``RevisionGone``, ``FileGone``
429                     ``RateLimited``, with the wait the Hub asked for
408, 5xx                ``HubUnavailable``
connection, timeout,    ``HubUnavailable``
cut or broken body
offline, not cached     ``HubUnavailable``
any other status        ``HubError`` (an answer, e.g. a 400)
======================  ==============================================

A 401 that huggingface_hub reads as "repository not found" (the Hub's answer
for a private repo to someone without access) stays ``RepoGone``: the Hub
does not tell a private repo from a missing one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
from huggingface_hub import constants
from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tracker.errors import (
    FileGone,
    Gated,
    HubError,
    HubUnavailable,
    RateLimited,
    RepoGone,
    RevisionGone,
)
from tracker.hub.retry import RETRY_STATUSES, retry_after

ACCESS_HINT = "set HF_TOKEN to a token with access, or run `hf auth login`"


@contextmanager
def translate_hub_errors(where: str) -> Iterator[None]:
    """huggingface_hub and transport exceptions as our HubError tree, cause kept."""
    try:
        yield
    except GatedRepoError as exc:
        raise Gated(
            f"{where}: repo is gated; accept its terms on the Hub, then {ACCESS_HINT}"
        ) from exc
    except DisabledRepoError as exc:
        raise RepoGone(f"{where}: repo is disabled on the Hub") from exc
    except RepositoryNotFoundError as exc:
        raise RepoGone(f"{where}: repo not found (deleted, renamed, or private)") from exc
    except RevisionNotFoundError as exc:
        raise RevisionGone(f"{where}: revision not found (history rewritten?)") from exc
    except RemoteEntryNotFoundError as exc:
        raise FileGone(f"{where}: file not found at this revision") from exc
    except OfflineModeIsEnabled as exc:
        raise HubUnavailable(
            f"{where}: HF_HUB_OFFLINE is set and the HF cache does not hold it"
        ) from exc
    except LocalEntryNotFoundError as exc:
        raise HubUnavailable(
            f"{where}: {_not_cached(exc)} and the HF cache does not hold it"
        ) from exc
    except HfHubHTTPError as exc:
        raise _from_status(where, exc) from exc
    except (httpx2.HTTPError, json.JSONDecodeError) as exc:
        # JSONDecodeError: a body cut short inside a JSON answer huggingface_hub parsed.
        raise HubUnavailable(f"{where}: {_reason(exc)}") from exc


def _not_cached(exc: LocalEntryNotFoundError) -> str:
    """Why the HF cache had to answer: offline, or the Hub out of reach (and how)."""
    cause = exc.__cause__ or exc.__context__
    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    if cause is not None and not isinstance(cause, LocalEntryNotFoundError):
        return f"the Hub cannot be reached ({_reason(cause)})"
    return "the Hub cannot be reached"


def _reason(exc: BaseException) -> str:
    """An exception as one clause: its type, its text, and the retry's note if it gave up."""
    notes = "; ".join(getattr(exc, "__notes__", ()))
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return f"{text} ({notes})" if notes else text


def _from_status(where: str, exc: HfHubHTTPError) -> HubError:
    """An HTTP error without one of the Hub's error codes, by its status (module table)."""
    status = exc.response.status_code if exc.response is not None else None
    if status in (401, 403):
        return Gated(f"{where}: the Hub refused access (HTTP {status}); {ACCESS_HINT}")
    if status == 404:
        return RepoGone(f"{where}: not found (HTTP 404)")
    if status == 429:
        return RateLimited(f"{where}: rate limited by the Hub (HTTP 429)", retry_after(exc))
    if status is not None and (status >= 500 or status in RETRY_STATUSES):
        notes = "; ".join(getattr(exc, "__notes__", ()))
        return HubUnavailable(
            f"{where}: the Hub answered HTTP {status}" + (f" ({notes})" if notes else "")
        )
    return HubError(f"{where}: the Hub answered HTTP {status}: {exc}")


__all__ = ["translate_hub_errors"]
