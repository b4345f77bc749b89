"""Routes and answers both official clients rely on, checked on the wire.

The client-level contract is tests/contract/; these pin the HTTP details behind it:
revision HEAD and tags, X-Total-Count with limit/p paging, /raw/ (an LFS file's pointer),
ranges, 304, paths-info in both body encodings, expand validation, the compare route,
and a corpus entry whose path would leave the corpus directory (scripted files are
bytes in memory: a hostile path there is upstream data for the tracker to survive).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tracker.hubsim import CorpusError, HubEmulator, ScriptError, git_blob_id, load_corpus

MISTRAL = "mistralai/Mistral-7B-v0.1"
OLD, NEW = "e836d8f71b5812f9fee65618453dc537c66bd82a", "26bca36bde8333b5d7f72e9ed20ccda6a618af24"
SHARD = "model-00001-of-00002.safetensors"


def get(hub: HubEmulator, path: str, **kwargs: object) -> httpx2.Response:
    return httpx2.request(kwargs.pop("method", "GET"), hub.endpoint + path, **kwargs)  # type: ignore[arg-type]


def test_revision_head_and_tags_resolve(hub_emulator: HubEmulator) -> None:
    head = get(hub_emulator, f"/api/models/{MISTRAL}/revision/HEAD?expand=sha").json()
    assert head["sha"] == NEW
    hub_emulator.create_tag(MISTRAL, "v0.1", revision=OLD)
    tagged = get(hub_emulator, f"/api/models/{MISTRAL}/revision/refs%2Ftags%2Fv0.1?expand=sha")
    assert tagged.json()["sha"] == OLD
    refs = get(hub_emulator, f"/api/models/{MISTRAL}/refs").json()
    assert refs["tags"] == [{"name": "v0.1", "ref": "refs/tags/v0.1", "targetCommit": OLD}]
    with pytest.raises(ScriptError):
        hub_emulator.create_branch(MISTRAL, "v0.1")


def test_commits_total_count_and_limit_paging(hub_emulator: HubEmulator) -> None:
    total = len(hub_emulator.history(MISTRAL))
    first = get(hub_emulator, f"/api/models/{MISTRAL}/commits/main?limit=3")
    assert first.headers["X-Total-Count"] == str(total)
    assert [c["id"] for c in first.json()] == [c.sha for c in hub_emulator.history(MISTRAL)[:3]]
    assert first.links["next"]["url"].endswith("limit=3&p=1")
    second = httpx2.get(first.links["next"]["url"]).json()
    assert [c["id"] for c in second] == [c.sha for c in hub_emulator.history(MISTRAL)[3:6]]
    bad = get(hub_emulator, f"/api/models/{MISTRAL}/commits/main?limit=many")
    assert bad.status_code == 400 and "limit" in bad.json()["error"]


def test_raw_serves_what_git_stores(hub_emulator: HubEmulator) -> None:
    shard = hub_emulator.tree(MISTRAL)[SHARD]
    assert shard.lfs is not None
    pointer = get(hub_emulator, f"/{MISTRAL}/raw/main/{SHARD}")
    assert pointer.content.startswith(b"version https://git-lfs.github.com/spec/v1\n")
    assert f"oid sha256:{shard.lfs.sha256}".encode() in pointer.content
    assert pointer.headers["ETag"] == f'"{shard.oid}"' == f'"{git_blob_id(pointer.content)}"'
    head = get(hub_emulator, f"/{MISTRAL}/raw/main/config.json", method="HEAD")
    assert (head.status_code, head.headers["X-Repo-Commit"]) == (200, NEW)
    missing = get(hub_emulator, f"/{MISTRAL}/raw/main/nothing.json", method="HEAD")
    assert (missing.status_code, missing.headers["X-Error-Code"]) == (404, "EntryNotFound")


def test_ranges_and_304_on_resolve(hub_emulator: HubEmulator) -> None:
    url = f"/{MISTRAL}/resolve/main/{SHARD}"
    first = get(hub_emulator, url, headers={"Range": "bytes=0-0"})
    size = hub_emulator.tree(MISTRAL)[SHARD].size
    assert (first.status_code, first.headers["Content-Range"]) == (206, f"bytes 0-0/{size}")
    assert first.headers["X-Linked-Size"] == str(size)
    linked = first.headers["X-Linked-Etag"]
    cached = get(hub_emulator, url, headers={"If-None-Match": linked})
    assert (cached.status_code, cached.content) == (304, b"")
    beyond = get(hub_emulator, url, headers={"Range": f"bytes={size}-"})
    assert (beyond.status_code, beyond.headers["Content-Range"]) == (416, f"bytes */{size}")


@pytest.mark.parametrize("encoding", ["form", "json"])
def test_paths_info_reads_both_body_encodings(hub_emulator: HubEmulator, encoding: str) -> None:
    body = {"paths": ["config.json", "original", "absent.txt"], "expand": True}
    kwargs = {"json": body} if encoding == "json" else {"data": {**body, "expand": "true"}}
    rows = get(hub_emulator, f"/api/models/{MISTRAL}/paths-info/main", method="POST", **kwargs)
    assert [(r["path"], r["type"]) for r in rows.json()] == [("config.json", "file")]
    assert rows.json()[0]["lastCommit"]["id"] == OLD


def test_unknown_expand_key_is_a_400(hub_emulator: HubEmulator) -> None:
    answer = get(hub_emulator, f"/api/models/{MISTRAL}?expand=sha&expand=secrets")
    assert answer.status_code == 400
    assert "'secrets'" in answer.json()["error"] and "sha" in answer.headers["X-Error-Message"]
    fields = get(hub_emulator, f"/api/models/{MISTRAL}?expand=safetensors&expand=downloads").json()
    assert set(fields) == {"_id", "id", "modelId", "safetensors", "downloads"}
    assert fields["safetensors"]["total"] == sum(fields["safetensors"]["parameters"].values())


def test_compare_lists_what_changed_between_two_revisions(
    hub_emulator: HubEmulator, corpus_dir: Path
) -> None:
    raw = get(hub_emulator, f"/api/models/{MISTRAL}/compare/{OLD}..{NEW}?raw=true").text
    old, new = hub_emulator.tree(MISTRAL, OLD), hub_emulator.tree(MISTRAL, NEW)
    changed = {
        p for p in set(old) | set(new) if (old.get(p) and old[p].oid) != (new.get(p) and new[p].oid)
    }
    lines = raw.splitlines()
    assert {line.split("\t")[-1] for line in lines} == changed
    added = next(line for line in lines if line.endswith("\tmodel.safetensors.index.json"))
    index = new["model.safetensors.index.json"]
    assert added == (f"T {index.size}\t:000000 100644 {'0' * 40}... {index.oid}... A\t"
                     "model.safetensors.index.json")  # fmt: skip
    assert any(line.startswith("B ") and line.endswith(SHARD) for line in lines)
    unified = get(hub_emulator, f"/api/models/{MISTRAL}/compare/{OLD}..{NEW}").text
    assert "diff --git a/model.safetensors.index.json b/model.safetensors.index.json" in unified
    assert f"Binary files /dev/null and b/{SHARD} differ" in unified
    bad = get(hub_emulator, f"/api/models/{MISTRAL}/compare/{OLD}..nope")
    assert (bad.status_code, bad.headers["X-Error-Code"]) == (404, "RevisionNotFound")


@pytest.mark.parametrize(
    "path", ["../outside.json", "a/../../outside.json", "/etc/hostname", "./config.json"]
)
def test_a_manifest_path_leaving_the_corpus_is_refused(tmp_path: Path, path: str) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "org" / "name" / "abc").mkdir(parents=True)
    (tmp_path / "outside.json").write_text("{}")
    entry = {"repo_id": "org/name", "revision": "abc", "date": "2024-01-01T00:00:00+00:00",
             "file": path, "notes": "commit 'x' by y (main)"}  # fmt: skip
    (corpus / "MANIFEST.json").write_text(json.dumps([entry]))
    with pytest.raises(CorpusError, match="leaves the repo"):
        load_corpus(corpus)


def test_a_revision_folder_leaving_the_corpus_is_refused(tmp_path: Path) -> None:
    entry = {"repo_id": "org/name", "revision": "..", "date": "2024-01-01T00:00:00+00:00",
             "file": "config.json", "notes": "commit 'x' by y (main)"}  # fmt: skip
    (tmp_path / "MANIFEST.json").write_text(json.dumps([entry]))
    with pytest.raises(CorpusError, match="revision"):
        load_corpus(tmp_path)
