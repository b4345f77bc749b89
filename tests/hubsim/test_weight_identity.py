"""A weight file keeps its identity (oid, size, header) until the corpus uploads new weights.

Which commits upload weights is read here from the corpus's own records (MANIFEST.json
entries and EVENTS.json deletions of weight index files), not from the emulator; what a
checkpoint should hold is read from the corpus's config.json and index files.
"""

from __future__ import annotations

import itertools
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import HfApi

from storage import Database, changes_of, revisions
from tests.fixtures.change_recall import invented_weight_changes
from tests.storage.builders import recorded_at
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import Blob, HubEmulator, estimator_tensor_shapes
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

LLAMA2_CHAT = "meta-llama/Llama-2-7b-chat-hf"
BLOOM = "bigscience/bloom"
INDEX_SUFFIX = ".index.json"
REFLECTION = "mattshumer/Reflection-Llama-3.1-70B"  # 2d5b978a: vocab_size edit only
REPO = "acme/tiny"


@pytest.fixture(scope="module")
def emulator(corpus_dir: Path) -> HubEmulator:
    return HubEmulator(corpus_dir, tensor_shapes=estimator_tensor_shapes)


def weight_uploads(corpus_dir: Path) -> set[tuple[str, str | None]]:
    """(repo, sha) of every commit the corpus says added, changed or deleted a weight index.

    The sha is None for a repo's re-upload whose upstream commit is not recorded.
    """
    entries = json.loads((corpus_dir / "MANIFEST.json").read_text())
    entries += json.loads((corpus_dir / "EVENTS.json").read_text())
    return {(e["repo_id"], e["revision"]) for e in entries if str(e["file"]).endswith(INDEX_SUFFIX)}


def recorded_shas(corpus_dir: Path) -> set[str]:
    entries = json.loads((corpus_dir / "MANIFEST.json").read_text())
    entries += json.loads((corpus_dir / "EVENTS.json").read_text())
    return {e["revision"] for e in entries if e["revision"]}


def weight_files(tree: dict[str, Blob], committed: object) -> dict[str, tuple[str, int, bytes]]:
    """Derived shard path -> (oid, size, header bytes)."""
    out = {}
    for path, blob in tree.items():
        if path in committed or path.endswith(INDEX_SUFFIX):  # type: ignore[operator]
            continue
        if blob.lfs is None:
            continue
        out[path] = (blob.oid, blob.size, b"".join(blob.body.chunks(0, min(blob.size, 8))))
    return out


def header(blob: Blob) -> dict[str, Any]:
    (length,) = struct.unpack("<Q", b"".join(blob.body.chunks(0, 8)))
    return dict(json.loads(b"".join(blob.body.chunks(8, 8 + length))))


def test_weight_files_change_only_on_commits_the_corpus_records_as_uploads(
    emulator: HubEmulator, corpus_dir: Path
) -> None:
    uploads, known = weight_uploads(corpus_dir), recorded_shas(corpus_dir)
    unchanged_pairs = changed = 0
    for repo in emulator.repo_ids():
        line = list(reversed(emulator.history(repo)))
        for old, new in itertools.pairwise(line):
            before = weight_files(emulator.tree(repo, old.sha), old.files)
            after = weight_files(emulator.tree(repo, new.sha), new.files)
            if (repo, new.sha if new.sha in known else None) in uploads:
                changed += before != after
                continue
            assert before == after, (repo, new.sha, new.title)
            unchanged_pairs += 1
    assert unchanged_pairs > 300  # every config-only, tokenizer-only ... commit
    assert changed >= 30  # and the uploads do change them


def test_a_config_fixed_after_the_upload_gives_the_checkpoint_its_shapes(
    emulator: HubEmulator, corpus_dir: Path
) -> None:
    # bd90846 uploads the weights with an invalid config.json; 404e40e fixes it hours later.
    folder = corpus_dir / LLAMA2_CHAT
    config = json.loads(
        (folder / "404e40e9922eaa7b0a6891bcf64752ecab09f3ec/config.json").read_text()
    )
    index = json.loads(
        (
            folder / "bd90846d536c982b58c14cec336a3756bfd13ab1/model.safetensors.index.json"
        ).read_text()
    )
    for sha in ("bd90846d", "404e40e9", "08751db2"):
        tree = emulator.tree(LLAMA2_CHAT, sha)
        shards = {p: b for p, b in tree.items() if p.endswith(".safetensors")}
        tensors = {
            k: v for b in shards.values() for k, v in header(b).items() if k != "__metadata__"
        }
        assert tensors["lm_head.weight"]["shape"] == [config["vocab_size"], config["hidden_size"]]
        assert {t["dtype"] for t in tensors.values()} == {"F16"}  # config: torch_dtype float16
        data = sum(t["data_offsets"][1] - t["data_offsets"][0] for t in tensors.values())
        assert data == index["metadata"]["total_size"]  # upstream's own byte count


def test_bloom_config_edits_reshape_no_tensor(emulator: HubEmulator, corpus_dir: Path) -> None:
    uploads = {sha for repo, sha in weight_uploads(corpus_dir) if repo == BLOOM}
    assert len(uploads) == 3
    line = list(reversed(emulator.history(BLOOM)))
    config_only = [
        (old, new)
        for old, new in itertools.pairwise(line)
        if {p for p in new.files if new.files[p] != old.files.get(p)} == {"config.json"}
    ]
    assert len(config_only) >= 8 and not {new.sha for _, new in config_only} & uploads
    for old, commit in config_only:
        parent = emulator.tree(BLOOM, old.sha)
        tree = emulator.tree(BLOOM, commit.sha)
        for path, blob in tree.items():
            if path.endswith(".safetensors"):
                assert blob == parent[path] and header(blob) == header(parent[path])


def test_a_deleted_index_takes_its_shards_with_it(emulator: HubEmulator) -> None:
    repo = "ibm-granite/granite-3.1-1b-a400m-instruct"
    before = emulator.tree(repo, "c4f8e0dd19f0ce00bca6c9742751d1827e8fa03a")
    after = emulator.tree(repo, "8290d32ffc403c6d628249af989beb7800c70d77")
    assert any(p.endswith(".safetensors") for p in before)
    assert not any(p.endswith(".safetensors") for p in after)


def _config(dtype: str, hidden: int) -> bytes:
    return json.dumps(
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": hidden,
            "intermediate_size": 4 * hidden,
            "num_attention_heads": 4,
            "num_hidden_layers": 1,
            "vocab_size": 128,
            "torch_dtype": dtype,
        }
    ).encode()


def _index(total_size: int) -> bytes:
    return json.dumps(
        {
            "metadata": {"total_size": total_size},
            "weight_map": {"model.norm.weight": "model-00001-of-00001.safetensors"},
        }
    ).encode()


def test_a_config_only_commit_serves_the_same_weights_to_huggingface_hub(
    hub_emulator: HubEmulator,
) -> None:
    api = HfApi(endpoint=hub_emulator.endpoint, token=False)
    shard = "model-00001-of-00001.safetensors"
    hub_emulator.publish(
        REPO, {"config.json": _config("bfloat16", 64), "model.safetensors.index.json": _index(128)}
    )
    first = api.get_safetensors_metadata(REPO).files_metadata[shard].tensors["model.norm.weight"]
    first_sha = {s.rfilename: s for s in api.model_info(REPO, files_metadata=True).siblings or []}
    hub_emulator.publish(REPO, {"config.json": _config("float32", 96)}, title="Update config.json")
    kept = api.get_safetensors_metadata(REPO).files_metadata[shard].tensors["model.norm.weight"]
    kept_sha = {s.rfilename: s for s in api.model_info(REPO, files_metadata=True).siblings or []}
    assert (first.dtype, first.shape) == (kept.dtype, kept.shape) == ("BF16", [64])
    assert (
        kept_sha[shard].lfs == first_sha[shard].lfs
        and kept_sha[shard].blob_id == first_sha[shard].blob_id
    )
    hub_emulator.publish(
        REPO, {"model.safetensors.index.json": _index(384)}, title="Upload weights"
    )
    new = api.get_safetensors_metadata(REPO).files_metadata[shard].tensors["model.norm.weight"]
    assert (new.dtype, new.shape) == ("F32", [96])  # the upload is made for the config in force


@pytest.mark.parametrize("repo", [BLOOM, LLAMA2_CHAT, REFLECTION])
def test_backfill_records_no_weight_change_where_no_weights_were_uploaded(
    hub_emulator: HubEmulator, database: Database, corpus_dir: Path, repo: str
) -> None:
    uploads = {sha for r, sha in weight_uploads(corpus_dir) if r == repo}
    backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        repo,
        clock=recorded_at,
    )
    with database.read_session() as session:
        shas = [r.sha for r in revisions(session, repo)]
        weights = {
            sha: [c.message for c in changes_of(session, repo, sha) if c.artifact == "weights"]
            for sha in shas
        }
    assert len(shas) == len(hub_emulator.history(repo))
    invented = {sha: found for sha, found in weights.items() if found and sha not in uploads}
    assert invented == {}


@pytest.mark.slow
def test_no_corpus_commit_without_an_upload_records_a_weight_change(
    hub_emulator: HubEmulator, database: Database
) -> None:
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0)
    for repo in hub_emulator.repo_ids():
        backfill(database, hub, repo, clock=recorded_at)
    assert invented_weight_changes(database, hub_emulator) == []  # 13 before identities were kept
