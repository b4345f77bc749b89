"""Hostile and broken upstream files become recorded changes; stored data stays intact."""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime, timedelta

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from storage import Database, changes_of, get_blob, revisions, snapshot_at
from storage.records import Change
from tests.storage.builders import recorded_at
from tracker.errors import Gated, RateLimited, RepoGone
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

EMPTY_HUB = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)
REPO = "hostile/model"
CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 100,
}
TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
START = datetime(2026, 1, 1, tzinfo=UTC)


def publish(emulator: HubEmulator, day: int, files: dict[str, bytes], title: str) -> str:
    return emulator.publish(REPO, files, title=title, date=START + timedelta(days=day))


def latest_changes(database: Database) -> list[Change]:
    with database.read_session() as session:
        newest = max(revisions(session, REPO), key=lambda r: r.date)
        return changes_of(session, REPO, newest.sha)


@EMPTY_HUB
def test_hostile_revision_is_recorded_as_changes_and_old_data_stays(
    hub_emulator: HubEmulator, database: Database
) -> None:
    good_config = json.dumps(CONFIG).encode()
    first = publish(
        hub_emulator,
        0,
        {"config.json": good_config, "chat_template.jinja": TEMPLATE.encode()},
        "upload",
    )
    huge_header = struct.pack("<Q", 10**12) + b"{}"
    looping = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    publish(
        hub_emulator,
        1,
        {
            "../escape.json": b"{}",
            "notes.json": b"[" + b"0," * (6 * 1024 * 1024) + b"0]",
            "model.safetensors": huge_header,
            "config.json": b'{"model_type": "llama",,}',
            "chat_template.jinja": looping.encode(),
        },
        "hostile",
    )
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0)
    report = backfill(database, hub, REPO, clock=recorded_at)
    assert report.recorded == report.revisions == 3

    kinds = {(c.kind, c.path) for c in latest_changes(database)}
    assert ("unsafe_path", "../escape.json") in kinds
    assert ("oversized", "notes.json") in kinds
    assert ("header_refused", "model.safetensors") in kinds
    assert ("parse_error", "config.json") in kinds
    assert ("render_error", "chat_template.jinja") in kinds
    messages = {c.kind: c.message for c in latest_changes(database)}
    assert "declares 1,000,000,000,000 bytes" in messages["header_refused"]
    assert "took longer than" in messages["render_error"]

    with database.read_session() as session:
        old = snapshot_at(session, REPO, first)
        assert get_blob(session, old.texts["config.json"]) == good_config
        assert get_blob(session, old.texts["chat_template.jinja"]) == TEMPLATE.encode()
    served = hub_emulator.stats.bytes_by_path()
    assert not [p for p in served if p.endswith("escape.json") or p.endswith("notes.json")]
    header_reads = [
        r for r in hub_emulator.stats.records("resolve") if "model.safetensors" in r.path
    ]
    assert sum(r.bytes_sent for r in header_reads) == 8


def tokenizer_json(vocab: list[str], special: list[str]) -> bytes:
    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(special)
    return tokenizer.to_str().encode()


@EMPTY_HUB
def test_tokenizer_realignment_is_reported_with_changed_ids(
    hub_emulator: HubEmulator, database: Database
) -> None:
    words = ["[UNK]", "Hello", ",", "world", "!"]
    publish(hub_emulator, 0, {"tokenizer.json": tokenizer_json(words, ["<s>"])}, "upload")
    publish(
        hub_emulator,
        1,
        {
            "tokenizer.json": tokenizer_json(
                ["[UNK]", "world", "Hello", ",", "!"], ["<s>", "<|eot_id|>"]
            )
        },
        "align tokenizer",
    )
    backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        REPO,
        clock=recorded_at,
    )
    changes = {c.kind: c for c in latest_changes(database)}
    assert changes["encoding_changed"].old["Hello, world!"] == [1, 2, 3, 4]
    assert changes["encoding_changed"].new["Hello, world!"] == [2, 3, 1, 4]
    assert changes["special_token_added"].new == {"<|eot_id|>": 6}


@EMPTY_HUB
def test_hub_failures_arrive_as_our_error_types(hub_emulator: HubEmulator) -> None:
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0)
    with pytest.raises(RepoGone, match="no-such/repo"):
        hub.commits("no-such/repo")
    publish(hub_emulator, 0, {"config.json": b"{}"}, "upload")
    sha = hub.head_sha(REPO)
    hub_emulator.set_gated(REPO, "manual")
    (entry,) = [f for f in hub.files(REPO, sha).files if f.path == "config.json"]
    with pytest.raises(Gated, match="HF_TOKEN"):
        hub.read_text(REPO, sha, entry, 1024)
    hub_emulator.set_gated(REPO, False)
    hub_emulator.faults.rate_limit(times=5, retry_after=7)
    with pytest.raises(RateLimited) as caught:
        hub.read_text(REPO, sha, entry, 1024)
    assert caught.value.retry_after == 7
