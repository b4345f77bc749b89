"""Tests change the Hub while it serves: new revisions, force-pushes, deletions, renames."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

from tracker.hubsim import Change, HubEmulator, ScriptError

REPO = "meta-llama/Llama-3.2-1B"


def api(emulator: HubEmulator) -> HfApi:
    return HfApi(endpoint=emulator.endpoint, token=False)


def test_published_revision_becomes_the_head(hub_emulator: HubEmulator, tmp_path: Path) -> None:
    before = api(hub_emulator).model_info(REPO).sha
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    sha = hub_emulator.publish(
        REPO, {"notes.txt": b"hello"}, title="Add notes", author="tester", date=when
    )
    info = api(hub_emulator).model_info(REPO)
    assert info.sha == sha != before
    assert info.last_modified == when
    commits = api(hub_emulator).list_repo_commits(REPO)
    assert (commits[0].commit_id, commits[0].title, commits[0].authors) == (
        sha,
        "Add notes",
        ["tester"],
    )
    assert commits[1].commit_id == before
    path = hf_hub_download(
        REPO, "notes.txt", endpoint=hub_emulator.endpoint, cache_dir=tmp_path, token=False
    )
    assert Path(path).read_bytes() == b"hello"


def test_publishing_a_deletion_removes_the_file(hub_emulator: HubEmulator) -> None:
    hub_emulator.publish(REPO, {}, deletions=["generation_config.json"])
    assert not api(hub_emulator).file_exists(REPO, "generation_config.json")
    with pytest.raises(ScriptError):
        hub_emulator.publish(REPO, {}, deletions=["generation_config.json"])


def test_force_push_rewrites_the_commit_list(hub_emulator: HubEmulator) -> None:
    original = [c.commit_id for c in api(hub_emulator).list_repo_commits(REPO)]
    hub_emulator.publish(REPO, {"a.txt": b"1"}, title="one")
    hub_emulator.publish(REPO, {"a.txt": b"2"}, title="two")
    head = hub_emulator.force_push(
        REPO, drop=2, replace=[Change({"a.txt": b"3"}, title="rewritten")]
    )
    commits = api(hub_emulator).list_repo_commits(REPO)
    assert commits[0].title == "rewritten"
    assert [c.commit_id for c in commits[1:]] == original
    assert commits[0].commit_id == head
    assert "one" not in {c.title for c in commits}


def test_new_weight_index_gets_new_shards(hub_emulator: HubEmulator) -> None:
    config = json.loads(b"".join(hub_emulator.tree(REPO)["config.json"].body.chunks(0, 10**6)))
    index = {
        "metadata": {"total_size": 8},
        "weight_map": {"model.norm.weight": "model-00001-of-00001.safetensors"},
    }
    hub_emulator.publish(
        REPO,
        {
            "model.safetensors.index.json": json.dumps(index).encode(),
            "config.json": json.dumps(config).encode(),
        },
    )
    files = {
        s.rfilename: s
        for s in api(hub_emulator).model_info(REPO, files_metadata=True).siblings or []
    }
    assert files["model-00001-of-00001.safetensors"].lfs is not None
    meta = api(hub_emulator).get_safetensors_metadata(REPO)
    assert list(meta.weight_map) == ["model.norm.weight"]
    assert meta.files_metadata["model-00001-of-00001.safetensors"].tensors[
        "model.norm.weight"
    ].shape == [config["hidden_size"]]


def test_deleted_repo_is_not_found(hub_emulator: HubEmulator) -> None:
    hub_emulator.delete_repo(REPO)
    with pytest.raises(RepositoryNotFoundError):
        api(hub_emulator).model_info(REPO)


def test_moved_repo_redirects_to_its_new_name(hub_emulator: HubEmulator) -> None:
    head = hub_emulator.head(REPO)
    hub_emulator.move_repo(REPO, "meta-llama/Renamed-1B")
    info = api(hub_emulator).model_info(REPO)
    assert (info.id, info.sha) == ("meta-llama/Renamed-1B", head)


def test_legacy_id_redirects_to_its_org_name_as_the_hub_does(
    hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    repo = "google-bert/bert-base-uncased"
    with pytest.raises(HfHubHTTPError):
        api(hub_emulator).model_info("bert-base-uncased")
    hub_emulator.alias_repo("bert-base-uncased", repo)
    info = api(hub_emulator).model_info("bert-base-uncased", revision="main")
    assert (info.id, info.sha) == (repo, hub_emulator.head(repo))
    path = hf_hub_download(
        "bert-base-uncased",
        "config.json",
        endpoint=hub_emulator.endpoint,
        cache_dir=tmp_path,
        token=False,
    )
    assert json.loads(Path(path).read_bytes())["model_type"] == "bert"
    assert hub_emulator.repo_ids().count(repo) == 1  # an alias, not a second repo


def test_publish_creates_a_repo_with_an_initial_commit(hub_emulator: HubEmulator) -> None:
    hub_emulator.publish("org/fresh", {"config.json": b"{}"})
    titles = [c.title for c in api(hub_emulator).list_repo_commits("org/fresh")]
    assert titles == ["Upload folder using huggingface_hub", "initial commit"]


def test_publishing_while_clients_read_never_breaks_a_response(hub_emulator: HubEmulator) -> None:
    failures: list[BaseException] = []
    lengths: list[int] = []

    def read() -> None:
        try:
            for _ in range(5):
                lengths.append(len(api(hub_emulator).list_repo_commits(REPO)))
        except BaseException as exc:  # collected and asserted below
            failures.append(exc)

    start = len(hub_emulator.history(REPO))
    readers = [threading.Thread(target=read) for _ in range(4)]
    for reader in readers:
        reader.start()
    for n in range(10):
        hub_emulator.publish(REPO, {"counter.txt": str(n).encode()})
    for reader in readers:
        reader.join()
    assert failures == []
    assert all(start <= n <= start + 10 for n in lengths)
    assert len(api(hub_emulator).list_repo_commits(REPO)) == start + 10
