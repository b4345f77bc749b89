"""The whole corpus replays: every repo, every recorded revision, every tree as the manifest says."""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tracker.hubsim import HubEmulator, estimator_tensor_shapes


@pytest.fixture(scope="module")
def emulator(corpus_dir: Path) -> HubEmulator:
    return HubEmulator(corpus_dir, tensor_shapes=estimator_tensor_shapes)


@pytest.fixture(scope="module")
def manifest(corpus_dir: Path) -> list[dict[str, Any]]:
    return list(json.loads((corpus_dir / "MANIFEST.json").read_text()))


def on_main(entry: dict[str, Any]) -> bool:
    return entry["revision"] is None or "(main)" in entry["notes"]


def main_deletions(corpus_dir: Path) -> dict[str, dict[str, str]]:
    """repo -> path -> date of the deletion that reached main (the last one of a path)."""
    events = json.loads((corpus_dir / "EVENTS.json").read_text())
    deleted: dict[str, dict[str, str]] = defaultdict(dict)
    for event in sorted(events, key=lambda e: e["date"]):
        if event["notes"].startswith("DELETED"):
            deleted[event["repo_id"]][event["file"]] = event["date"]
    return deleted


def test_every_repo_of_the_manifest_is_served(
    emulator: HubEmulator, manifest: list[dict[str, Any]]
) -> None:
    assert emulator.repo_ids() == sorted({e["repo_id"] for e in manifest})
    assert len(emulator.repo_ids()) == 77


def test_every_recorded_revision_holds_its_files(
    emulator: HubEmulator, manifest: list[dict[str, Any]], corpus_dir: Path
) -> None:
    for entry in manifest:
        repo, revision, path = entry["repo_id"], entry["revision"], entry["file"]
        if revision is None:
            continue
        tree = emulator.tree(repo, revision)
        assert tree[path].text() == (corpus_dir / repo / revision / path).read_bytes(), (
            repo,
            revision,
            path,
        )


def test_main_history_holds_exactly_the_main_commits(
    emulator: HubEmulator, manifest: list[dict[str, Any]]
) -> None:
    for repo in emulator.repo_ids():
        history = [c.sha for c in emulator.history(repo)]
        entries = [e for e in manifest if e["repo_id"] == repo and e["revision"]]
        assert {e["revision"] for e in entries if on_main(e)} <= set(history), repo
        assert not {e["revision"] for e in entries if not on_main(e)} & set(history), repo
        assert emulator.history(repo)[-1].title == "initial commit"
        dates = [c.date for c in emulator.history(repo)]
        assert dates == sorted(dates, reverse=True), repo


def test_tree_at_each_main_commit_follows_the_manifest(
    emulator: HubEmulator, manifest: list[dict[str, Any]], corpus_dir: Path
) -> None:
    deletions = main_deletions(corpus_dir)
    recorded = {e["revision"] for e in manifest} | {
        e["revision"] for e in json.loads((corpus_dir / "EVENTS.json").read_text())
    }
    checked = 0
    for repo in emulator.repo_ids():
        entries = sorted(
            (e for e in manifest if e["repo_id"] == repo and on_main(e)),
            key=lambda e: e["date"] or "",
        )
        history = emulator.history(repo)
        for position, commit in enumerate(history[:-1]):
            expected: dict[str, bytes] = {}
            for ancestor in reversed(history[position:-1]):  # oldest first, each on top
                revision = ancestor.sha if ancestor.sha in recorded else None
                for entry in (e for e in entries if e["revision"] == revision):
                    folder = revision or "unknown"
                    expected[entry["file"]] = (
                        corpus_dir / repo / folder / entry["file"]
                    ).read_bytes()
            for path, when in deletions.get(repo, {}).items():
                readded = any(
                    e["file"] == path and when < (e["date"] or "") <= commit.date.isoformat()
                    for e in entries
                )
                if when <= commit.date.isoformat() and not readded:
                    expected.pop(path, None)
            committed = {p: b.text() for p, b in commit.files.items() if p != ".gitattributes"}
            assert committed == expected, (repo, commit.sha)
            checked += 1
    assert checked >= 300


def test_every_weight_index_yields_parseable_shards(emulator: HubEmulator) -> None:
    shards = 0
    for repo in emulator.repo_ids():
        tree = emulator.tree(repo)
        for path, blob in tree.items():
            if not path.endswith(".safetensors.index.json"):
                continue
            try:
                weight_map = json.loads(blob.text() or b"")["weight_map"]
            except (ValueError, KeyError):
                continue
            folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
            named: set[str] = set()
            for shard in set(weight_map.values()):
                body = tree[folder + shard].body
                (length,) = struct.unpack("<Q", b"".join(body.chunks(0, 8)))
                header = json.loads(b"".join(body.chunks(8, 8 + length)))
                ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"]
                assert body.size == 8 + length + max(ends, default=0)
                named |= set(header) - {"__metadata__"}
                shards += 1
            assert named == set(weight_map), (repo, path)
    assert shards > 30
