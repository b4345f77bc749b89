"""A revision that leaves the weights alone carries its parent's manifest, the very object.

``build_manifest`` returns the parent's manifest without parsing the index files or
copying a tensor where the index files and the shards are the parent's; anywhere else
it builds one. Both ways must give exactly the manifest a build from nothing gives
(the same JSON text, key order included), for each revision of a sharded repo
published on the Hub emulator and read through the real client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from storage.records import Revision, Snapshot
from tests.tracker.test_safetensors_header import safetensors
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.weights_manifest import build_manifest
from tracker.settings import HubSettings

REPO = "shards/model"
START = datetime(2026, 3, 1, tzinfo=UTC)
INDEX = "model.safetensors.index.json"


def shard(tensors: Mapping[str, list[int]]) -> bytes:
    """A safetensors file of empty ``tensors`` (bf16, of these shapes): its header alone."""
    header = {
        name: {"dtype": "BF16", "shape": shape, "data_offsets": [0, 0]}
        for name, shape in tensors.items()
    }
    return safetensors(header, body=b"")


def index(weight_map: Mapping[str, str]) -> bytes:
    return json.dumps({"metadata": {"total_size": 0}, "weight_map": dict(weight_map)}).encode()


FIRST = {"a.weight": [4, 4], "b.weight": [4]}
SECOND = {"c.weight": [8, 4], "d.weight": [2]}
WEIGHT_MAP = {name: "model-00001-of-00002.safetensors" for name in FIRST} | {
    name: "model-00002-of-00002.safetensors" for name in SECOND
}
REVISIONS: list[tuple[str, dict[str, bytes]]] = [
    (
        "sharded weights",
        {
            "README.md": b"# shards\n",
            INDEX: index(WEIGHT_MAP),
            "model-00001-of-00002.safetensors": shard(FIRST),
            "model-00002-of-00002.safetensors": shard(SECOND),
        },
    ),
    ("the card alone", {"README.md": b"# shards, described\n"}),
    (
        "one shard reshaped",
        {"model-00002-of-00002.safetensors": shard({**SECOND, "d.weight": [3]})},
    ),
    ("the index alone", {INDEX: index(dict(reversed(list(WEIGHT_MAP.items()))))}),
]
"""Each revision's title and its files over its parent's."""


@pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)
def test_a_revision_leaving_the_weights_alone_carries_the_parents_manifest(
    hub_emulator: HubEmulator,
) -> None:
    for day, (title, files) in enumerate(REVISIONS):
        hub_emulator.publish(REPO, files, title=title, date=START + timedelta(days=day))
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)))
    history = [r for r in hub.commits(REPO) if r.title in dict(REVISIONS)]
    previous: Snapshot | None = None
    carried_from: list[bool] = []
    for revision in history:
        snapshot, fresh = built(hub, revision, previous), built(hub, revision, None)
        assert snapshot.manifest is not None and fresh.manifest is not None
        assert json.dumps(snapshot.manifest) == json.dumps(fresh.manifest), revision.title
        carried_from.append(previous is not None and snapshot.manifest is previous.manifest)
        previous = snapshot
    assert [r.title for r in history] == [title for title, _ in REVISIONS]
    assert carried_from == [False, True, False, False]
    assert previous is not None and previous.manifest is not None
    assert list(previous.manifest["weight_map"]) == list(reversed(list(WEIGHT_MAP)))


def built(hub: Hub, revision: Revision, previous: Snapshot | None) -> Snapshot:
    """``revision``'s snapshot with the manifest built over ``previous`` (None: from nothing)."""
    files = hub.files(revision.repo_id, revision.sha).files
    texts = {entry.path: entry.content_key for entry in files if entry.path.endswith(".json")}
    bodies: dict[str, bytes] = {
        entry.content_key: hub.read_text(revision.repo_id, revision.sha, entry, 1 << 20)
        for entry in files
        if entry.path in texts
    }
    manifest: Any
    manifest, skipped = build_manifest(hub, revision, files, texts, previous, bodies.__getitem__)
    assert skipped == []
    return Snapshot(revision, files, texts, manifest=manifest)
