"""Weight shards look real (sizes, headers) but their bodies are zeros made while writing."""

from __future__ import annotations

import json
import struct
import tracemalloc

import httpx2
from huggingface_hub import HfApi

from tracker.hubsim import HubEmulator, safetensors_header

MIXTRAL = "mistralai/Mixtral-8x7B-v0.1"


def test_shard_sizes_are_header_plus_declared_data(hub_emulator: HubEmulator) -> None:
    tree = hub_emulator.tree(MIXTRAL)
    index = json.loads(tree["model.safetensors.index.json"].text() or b"")
    shards = {p: b for p, b in tree.items() if p.endswith(".safetensors")}
    assert set(shards) == set(index["weight_map"].values())
    data = 0
    for blob in shards.values():
        (length,) = struct.unpack("<Q", b"".join(blob.body.chunks(0, 8)))
        data += blob.size - 8 - length
    assert data == index["metadata"]["total_size"]  # the estimator's shapes add up to upstream's


def test_tail_of_a_huge_shard_is_served_without_materialising_it(hub_emulator: HubEmulator) -> None:
    path, blob = next(
        (p, b) for p, b in hub_emulator.tree(MIXTRAL).items() if p.endswith(".safetensors")
    )
    assert blob.size > 4 * 10**9
    tracemalloc.start()
    response = httpx2.get(
        f"{hub_emulator.endpoint}/{MIXTRAL}/resolve/main/{path}",
        headers={"Range": "bytes=-1048576"},
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert response.status_code == 206 and response.content == bytes(1048576)
    assert peak < 64 * 1048576


def test_lfs_headers_on_resolve(hub_emulator: HubEmulator) -> None:
    path, blob = next(
        (p, b) for p, b in hub_emulator.tree(MIXTRAL).items() if p.endswith(".safetensors")
    )
    response = httpx2.head(f"{hub_emulator.endpoint}/{MIXTRAL}/resolve/main/{path}")
    assert blob.lfs is not None
    assert response.headers["X-Linked-Etag"] == f'"{blob.lfs.sha256}"'
    assert response.headers["X-Linked-Size"] == str(blob.size)
    assert response.headers["X-Repo-Commit"] == hub_emulator.head(MIXTRAL)
    assert response.headers["Accept-Ranges"] == "bytes"
    assert hub_emulator.stats.bytes_sent("resolve") == 0  # HEAD sends no body


def test_pickle_shards_are_listed_as_lfs_files(hub_emulator: HubEmulator) -> None:
    info = HfApi(endpoint=hub_emulator.endpoint, token=False).model_info(
        "mistralai/Mistral-7B-v0.1", files_metadata=True
    )
    bins = [s for s in info.siblings or [] if s.rfilename.endswith(".bin")]
    assert len(bins) == 2 and all(s.lfs is not None and (s.size or 0) > 10**9 for s in bins)


def test_header_layout_is_contiguous_and_aligned() -> None:
    prefix, data = safetensors_header(["a", "b"], {"a": [2, 3], "b": [4]}, "BF16", 2)
    (length,) = struct.unpack("<Q", prefix[:8])
    header = json.loads(prefix[8:])
    assert length % 8 == 0 and len(prefix) == 8 + length
    assert header["a"]["data_offsets"] == [0, 12] and header["b"]["data_offsets"] == [12, 20]
    assert data == 20


def test_expand_returns_only_the_requested_fields(hub_emulator: HubEmulator) -> None:
    body = httpx2.get(
        f"{hub_emulator.endpoint}/api/models/{MIXTRAL}",
        params=[("expand", "sha"), ("expand", "lastModified")],
    ).json()
    assert set(body) == {"_id", "id", "modelId", "sha", "lastModified"}
    assert hub_emulator.stats.by_path()[f"/api/models/{MIXTRAL}"] == 1
