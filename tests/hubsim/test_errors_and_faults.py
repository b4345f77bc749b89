"""Errors arrive as the Hub sends them, and injected faults behave as a flaky Hub does."""

from __future__ import annotations

import time
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tracker.hubsim import Fault, HubEmulator

REPO = "meta-llama/Llama-3.2-1B"


def api(emulator: HubEmulator, token: str | bool = False) -> HfApi:
    return HfApi(endpoint=emulator.endpoint, token=token)


def test_unknown_repo_is_repository_not_found(hub_emulator: HubEmulator) -> None:
    with pytest.raises(RepositoryNotFoundError) as caught:
        api(hub_emulator).model_info("nobody/nothing")
    assert caught.value.response.status_code == 401
    assert caught.value.response.headers["X-Error-Code"] == "RepoNotFound"


def test_unknown_revision_is_revision_not_found(hub_emulator: HubEmulator) -> None:
    with pytest.raises(RevisionNotFoundError):
        api(hub_emulator).list_repo_commits(REPO, revision="no-such-branch")


def test_missing_file_is_entry_not_found_with_the_commit(
    hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    with pytest.raises(RemoteEntryNotFoundError) as caught:
        hf_hub_download(
            REPO, "missing.json", endpoint=hub_emulator.endpoint, cache_dir=tmp_path, token=False
        )
    assert caught.value.response.headers["X-Repo-Commit"] == hub_emulator.head(REPO)


def test_gated_repo_refuses_anonymous_and_unapproved_downloads(
    hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    hub_emulator.set_gated(REPO, "manual", approved=["hf_approved"])
    with pytest.raises(GatedRepoError) as anonymous:
        hf_hub_download(
            REPO, "config.json", endpoint=hub_emulator.endpoint, cache_dir=tmp_path, token=False
        )
    assert anonymous.value.response.status_code == 401
    with pytest.raises(GatedRepoError) as refused:
        hf_hub_download(
            REPO,
            "config.json",
            endpoint=hub_emulator.endpoint,
            cache_dir=tmp_path,
            token="hf_other",
        )
    assert refused.value.response.status_code == 403
    path = hf_hub_download(
        REPO, "config.json", endpoint=hub_emulator.endpoint, cache_dir=tmp_path, token="hf_approved"
    )
    assert Path(path).stat().st_size > 0
    assert api(hub_emulator).model_info(REPO).gated == "manual"  # metadata stays public


def test_private_repo_is_not_found_to_strangers(hub_emulator: HubEmulator) -> None:
    hub_emulator.set_private(REPO, tokens=["hf_owner"])
    with pytest.raises(RepositoryNotFoundError):
        api(hub_emulator).model_info(REPO)
    with pytest.raises(RepositoryNotFoundError) as with_token:
        api(hub_emulator, "hf_stranger").model_info(REPO)
    assert with_token.value.response.status_code == 404
    assert api(hub_emulator, "hf_owner").model_info(REPO).private is True
    assert REPO not in {m.id for m in api(hub_emulator).list_models(author="meta-llama")}


def test_rate_limit_is_retried_after_retry_after(hub_emulator: HubEmulator) -> None:
    fault = hub_emulator.faults.rate_limit(times=1, retry_after=0, endpoint="commits")
    started = time.monotonic()
    commits = api(hub_emulator).list_repo_commits(REPO)
    assert commits and fault.hits == 1
    assert time.monotonic() - started >= 1.0  # the client waits Retry-After + 1 s
    assert hub_emulator.stats.by_status()[429] == 1


def test_rate_limit_response_carries_the_hub_headers(hub_emulator: HubEmulator) -> None:
    hub_emulator.faults.rate_limit(times=1, retry_after=7, endpoint="api")
    response = httpx2.get(f"{hub_emulator.endpoint}/api/models/{REPO}")
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert response.headers["RateLimit"] == '"api";r=0;t=7'
    assert response.json() == {"error": response.headers["X-Error-Message"]}


def test_server_errors_are_retried_by_http_backoff(hub_emulator: HubEmulator) -> None:
    hub_emulator.faults.errors(times=1, status=503, endpoint="commits")
    assert api(hub_emulator).list_repo_commits(REPO)
    assert hub_emulator.stats.by_status()[503] == 1


def test_persistent_errors_surface_as_http_errors(hub_emulator: HubEmulator) -> None:
    hub_emulator.faults.errors(times=None, status=400, endpoint="model_info")  # type: ignore[arg-type]
    with pytest.raises(HfHubHTTPError):
        api(hub_emulator).model_info(REPO)


def test_connection_reset_is_retried(hub_emulator: HubEmulator) -> None:
    fault = hub_emulator.faults.reset(times=1, endpoint="commits")
    assert api(hub_emulator).list_repo_commits(REPO)
    assert fault.hits == 1


def test_truncated_body_is_detected_by_the_client(hub_emulator: HubEmulator) -> None:
    hub_emulator.faults.truncate(times=1, keep_bytes=10, endpoint="model_info")
    with pytest.raises(httpx2.RemoteProtocolError):
        api(hub_emulator).model_info(REPO)
    assert hub_emulator.stats.records("model_info")[0].bytes_sent == 10


def test_hang_outlasts_the_client_timeout(hub_emulator: HubEmulator) -> None:
    hub_emulator.faults.hang(seconds=3, endpoint="model_info")
    with pytest.raises(httpx2.TimeoutException):
        api(hub_emulator).model_info(REPO, timeout=0.5)


def test_error_rate_is_reproducible_with_a_seed(corpus_dir: Path) -> None:
    outcomes = []
    for _ in range(2):
        emulator = HubEmulator(corpus_dir, seed=7)
        emulator.faults.error_rate(0.5, status=500, endpoint="refs")
        emulator.start()
        try:
            url = f"{emulator.endpoint}/api/models/{REPO}/refs"
            outcomes.append([httpx2.get(url).status_code for _ in range(12)])
        finally:
            emulator.stop()
    assert outcomes[0] == outcomes[1]
    assert {200, 500} == set(outcomes[0])


def test_range_requests_get_exact_slices_or_416(hub_emulator: HubEmulator) -> None:
    url = f"{hub_emulator.endpoint}/{REPO}/resolve/main/config.json"
    whole = httpx2.get(url).content
    part = httpx2.get(url, headers={"Range": "bytes=5-9"})
    assert part.status_code == 206 and part.content == whole[5:10]
    assert part.headers["Content-Range"] == f"bytes 5-9/{len(whole)}"
    assert httpx2.get(url, headers={"Range": "bytes=-4"}).content == whole[-4:]
    beyond = httpx2.get(url, headers={"Range": f"bytes={len(whole)}-"})
    assert beyond.status_code == 416 and beyond.headers["Content-Range"] == f"bytes */{len(whole)}"


def test_truncated_download_is_retried_to_the_right_bytes(
    hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    hub_emulator.faults.add(
        Fault("truncate", "resolve", path_contains="config.json", times=1, keep_bytes=100)
    )
    path = hf_hub_download(
        REPO, "config.json", endpoint=hub_emulator.endpoint, cache_dir=tmp_path, token=False
    )
    whole = hub_emulator.tree(REPO)["config.json"].text() or b""
    assert Path(path).read_bytes() == whole
    gets = [r for r in hub_emulator.stats.records("resolve") if r.method == "GET"]
    # the client buffers 10 MB chunks, so the cut-off 100 bytes never reach the file
    assert [r.bytes_sent for r in gets] == [100, len(whole)]
