"""One Hub answer is one error, whichever Hub call met it.

``Hub``, ``HeadProbe`` and ``Discovery`` run the real huggingface_hub client,
built by ``tracker.hub.api.connect``, against the Hub emulator answering with a
bare status (no ``X-Error-Code``), and each raises the class
``tracker.hub.translate``'s table gives that status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import huggingface_hub
import pytest

from tracker.demo import HISTORIES
from tracker.errors import Gated, HubError, HubUnavailable, RateLimited, RepoGone
from tracker.hub.api import HEADERS_TTL_S, LIBRARY, RequestHeaders, connect, request_headers
from tracker.hub.client import Hub
from tracker.hub.discovery import Discovery, HeadProbe
from tracker.hub.retry import NO_RETRIES, Retrying
from tracker.hubsim import Fault, HubEmulator
from tracker.settings import HubSettings


@pytest.fixture(scope="module")
def demo_hub() -> Iterator[HubEmulator]:
    emulator = HubEmulator(HISTORIES)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


CALLERS = ["Hub.head_sha", "HeadProbe.head", "Discovery.walk"]


def _callers(hub: HubEmulator) -> dict[str, tuple[str, Callable[[], object]]]:
    """Each Hub call with the emulator endpoint kind its request reaches."""
    api = connect(HubSettings(hub.endpoint))
    repo_id = hub.repo_ids()[0]
    return {
        "Hub.head_sha": ("model_info", lambda: Hub(api, max_retries=0).head_sha(repo_id)),
        "HeadProbe.head": (
            "model_info",
            lambda: HeadProbe(api, retrying=Retrying(NO_RETRIES)).head(repo_id),
        ),
        "Discovery.walk": ("list_models", lambda: Discovery(api).walk(None, {})),
    }


ANSWERS = [(403, Gated), (404, RepoGone), (400, HubError), (409, HubError)]
"""Answers no layer retries; 5xx and 429 are retried by huggingface_hub inside
``list_models`` (its ``paginate``), so those are asked of the other two calls."""
TRANSIENT = [(500, HubUnavailable), (503, HubUnavailable)]


@pytest.mark.parametrize(
    ("caller", "status", "error"),
    [
        *((caller, status, error) for caller in CALLERS for status, error in ANSWERS),
        *((caller, status, error) for caller in CALLERS[:2] for status, error in TRANSIENT),
    ],
)
def test_a_bare_status_is_the_same_error_from_every_hub_call(
    demo_hub: HubEmulator, caller: str, status: int, error: type[HubError]
) -> None:
    kind, call = _callers(demo_hub)[caller]
    demo_hub.faults.clear()
    demo_hub.faults.add(Fault("status", kind, status=status))
    try:
        with pytest.raises(HubError) as caught:
            call()
    finally:
        demo_hub.faults.clear()
    assert type(caught.value) is error
    assert f"HTTP {status}" in str(caught.value)


@pytest.mark.parametrize("caller", CALLERS[:2])
def test_a_429_carries_the_hubs_wait_from_every_hub_call(
    demo_hub: HubEmulator, caller: str
) -> None:
    kind, call = _callers(demo_hub)[caller]
    demo_hub.faults.clear()
    demo_hub.faults.add(Fault("rate_limit", kind, retry_after=42))
    try:
        with pytest.raises(RateLimited) as caught:
            call()
    finally:
        demo_hub.faults.clear()
    assert caught.value.retry_after == 42


def test_the_client_names_the_tracker_and_leaves_the_token_to_huggingface_hub(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = connect(HubSettings("http://127.0.0.1:9/"))
    assert api.endpoint == "http://127.0.0.1:9"
    assert api.token is None  # None: huggingface_hub looks up HF_TOKEN and the token file
    monkeypatch.setenv("HF_TOKEN", "hf_from_the_environment")
    # the emulator suites' conftests turn the library's implicit token off for the session;
    # a user's machine has it on, and that lookup is what this test is about
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    headers = request_headers(api, {"Range": "bytes=0-7"})
    assert headers["authorization"] == "Bearer hf_from_the_environment"
    assert headers["user-agent"].startswith(f"{LIBRARY}/")
    assert headers["Range"] == "bytes=0-7"
    given = connect(HubSettings("http://127.0.0.1:9", "hf_from_the_settings"))
    assert request_headers(given)["authorization"] == "Bearer hf_from_the_settings"


def test_a_token_saved_while_the_daemon_runs_is_sent_within_the_headers_lifetime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.setenv("HF_TOKEN", "hf_before")
    now = [100.0]
    headers = RequestHeaders(connect(HubSettings("http://127.0.0.1:9")), clock=lambda: now[0])
    first = headers({"Range": "bytes=0-7"})
    assert first["authorization"] == "Bearer hf_before"
    first["authorization"] = "changed by the caller"  # each call hands out its own dict
    monkeypatch.setenv("HF_TOKEN", "hf_after")
    now[0] += HEADERS_TTL_S - 1
    kept = headers()
    assert kept["authorization"] == "Bearer hf_before"  # resolved once, not per request
    assert "Range" not in kept
    now[0] += 1
    assert headers()["authorization"] == "Bearer hf_after"
