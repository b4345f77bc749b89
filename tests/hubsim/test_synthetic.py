"""A synthetic Hub: N repos drawn from the corpus's shapes, deterministic by seed, read lazily."""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from huggingface_hub import HfApi, hf_hub_download

from tracker.cli import main
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.hubsim import synthetic as synthetic_module
from tracker.hubsim.synthetic import SyntheticStore

SIZE = 300


@pytest.fixture(scope="module")
def store(corpus_dir: Path) -> SyntheticStore:
    return SyntheticStore(SIZE, 11, corpus_dir, estimator_tensor_shapes)


@pytest.fixture
def served(corpus_dir: Path) -> Iterator[HubEmulator]:
    emulator = HubEmulator(
        None, page_size=50, store=SyntheticStore(SIZE, 11, corpus_dir, estimator_tensor_shapes)
    )
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


def test_same_seed_same_hub_other_seed_other_hub(corpus_dir: Path, store: SyntheticStore) -> None:
    again = SyntheticStore(SIZE, 11, corpus_dir, estimator_tensor_shapes)
    other = SyntheticStore(SIZE, 12, corpus_dir, estimator_tensor_shapes)
    for index in (0, 17, SIZE - 1):
        repo_id = store.generator.repo_id(index)
        mine, theirs = store.repos[repo_id], again.repos[repo_id]
        assert list(mine.commits) == list(theirs.commits)
        head = mine.commits[mine.branches["main"]]
        assert {p: b.oid for p, b in store.tree(head).items()} == {
            p: b.oid for p, b in again.tree(theirs.commits[head.sha]).items()
        }
    assert [store.generator.schedule(i).head.sha for i in range(SIZE)] != [
        other.generator.schedule(i).head.sha for i in range(SIZE)
    ]


def test_revision_counts_have_a_heavy_tail(store: SyntheticStore) -> None:
    counts = [len(store.generator.schedule(i).steps) for i in range(2000)]
    assert min(counts) >= 2  # the initial commit and the first upload
    assert 9 <= statistics.mean(counts) <= 15, statistics.mean(counts)
    assert statistics.median(counts) < statistics.mean(counts)
    assert max(counts) >= 100


def test_every_edit_shape_of_the_corpus_appears(store: SyntheticStore) -> None:
    kinds = Counter(s.kind for i in range(500) for s in store.generator.schedule(i).steps)
    for kind in ("config", "generation", "tokenizer", "template", "weights", "readme"):
        assert kinds[kind] > 50, kinds
    changed: Counter[str] = Counter()
    for index in range(120):
        for written in store.generator.files(store.generator.schedule(index))[2:]:
            changed.update(written.keys())
    for path in ("config.json", "tokenizer_config.json", "README.md", "generation_config.json"):
        assert changed[path] > 20, changed
    assert any(p.endswith(".index.json") for p in changed), changed


def test_a_config_edit_changes_what_the_tracker_reads(store: SyntheticStore) -> None:
    fields: Counter[str] = Counter()
    for index in range(200):
        schedule = store.generator.schedule(index)
        written = store.generator.files(schedule)
        before = json.loads(written[1]["config.json"])
        for step, change in zip(schedule.steps[2:], written[2:], strict=True):
            if step.kind == "config" and "config.json" in change:
                after = json.loads(change["config.json"])
                fields.update(k for k in after if after.get(k) != before.get(k))
                before = after
    for name in ("max_position_embeddings", "rope_scaling", "eos_token_id", "torch_dtype"):
        assert fields[name] > 0, fields


def test_the_client_reads_a_synthetic_history_and_its_files(
    served: HubEmulator, tmp_path: Path
) -> None:
    store = served.store
    assert isinstance(store, SyntheticStore)
    repo_id = store.generator.repo_id(42)
    schedule = store.generator.schedule(42)
    api = HfApi(endpoint=served.endpoint, token=False)
    commits = api.list_repo_commits(repo_id)
    assert [c.commit_id for c in commits] == [s.sha for s in reversed(schedule.steps)]
    middle = len(schedule.steps) // 2
    expected: dict[str, bytes] = {}
    for change in store.generator.files(schedule)[: middle + 1]:
        expected.update(change)
    revision = schedule.steps[middle].sha
    info = api.model_info(repo_id, revision=revision, files_metadata=True)
    assert set(expected) <= {s.rfilename for s in info.siblings or []}
    path = hf_hub_download(
        repo_id, "config.json", revision=revision, endpoint=served.endpoint, cache_dir=tmp_path
    )
    assert Path(path).read_bytes() == expected["config.json"]


def test_listing_walks_every_repo_newest_first_in_pages(served: HubEmulator) -> None:
    api = HfApi(endpoint=served.endpoint, token=False)
    listed = list(api.list_models(sort="last_modified", expand=["lastModified", "sha"]))
    assert len(listed) == SIZE
    stamps = [m.last_modified for m in listed if m.last_modified is not None]
    assert len(stamps) == SIZE
    assert stamps == sorted(stamps, reverse=True)
    store = served.store
    assert isinstance(store, SyntheticStore)
    assert {m.id: m.sha for m in listed} == {
        store.generator.repo_id(i): store.generator.schedule(i).head.sha for i in range(SIZE)
    }
    assert served.stats.requests("list_models") == SIZE // 50


def test_a_push_to_a_synthetic_repo_lists_it_first(served: HubEmulator) -> None:
    store = served.store
    assert isinstance(store, SyntheticStore)
    repo_id = store.generator.repo_id(7)
    sha = served.publish(
        repo_id, {"config.json": b'{"model_type": "llama"}'}, date=datetime.now(UTC)
    )
    api = HfApi(endpoint=served.endpoint, token=False)
    first = next(iter(api.list_models(sort="last_modified", expand=["lastModified", "sha"])))
    assert (first.id, first.sha) == (repo_id, sha)
    assert api.list_repo_commits(repo_id)[0].commit_id == sha
    listed = [m.id for m in api.list_models(sort="last_modified", expand=["sha"])]
    assert len(listed) == SIZE and len(set(listed)) == SIZE


def test_only_a_bounded_number_of_repos_is_held_in_full(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(synthetic_module, "MATERIALIZED", 8)
    monkeypatch.setattr(synthetic_module, "SKELETONS", 16)
    store = SyntheticStore(200, 3, corpus_dir, estimator_tensor_shapes)
    for index in range(100):
        repo = store.repos[store.generator.repo_id(index)]
        store.tree(repo.commits[repo.branches["main"]])
    assert len(store._materialized) == 8
    assert len(store._skeletons) == 16


def test_hubsim_command_serves_a_synthetic_hub(corpus_dir: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "tracker.cli", "hubsim", "--corpus", str(corpus_dir)]
    command += ["--port", str(port), "--synthetic", "40", "--seed", "5"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving 40 repos at ")
        api = HfApi(endpoint=f"http://127.0.0.1:{port}", token=False)
        newest = next(iter(api.list_models(sort="last_modified", expand=["sha"])))
        expected = SyntheticStore(40, 5, corpus_dir)
        heads = {expected.generator.repo_id(i): expected.generator.schedule(i) for i in range(40)}
        assert newest.sha == heads[newest.id].head.sha
        assert newest.sha == max(heads.values(), key=lambda s: s.head.date).head.sha
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_synthetic_size_below_one_is_a_usage_error(corpus_dir: Path) -> None:
    args = ["hubsim", "--corpus", str(corpus_dir), "--port", "0", "--synthetic", "0"]
    assert main(args) == 2
