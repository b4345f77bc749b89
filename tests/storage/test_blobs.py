"""The blob store: one row per content, compressed, bounded, asked about in bulk."""

from __future__ import annotations

import json
import os

import pytest
from sqlalchemy import event, func, select

from storage import (
    BlobNotFound,
    BlobTooLarge,
    Database,
    get_blob,
    known_content_keys,
    put_blob,
    record_revision,
)
from storage.models import BlobRow, SnapshotRow
from tests.storage.builders import RECORDED_AT, git_blob_id, revision, snapshot

REPO = "Qwen/Qwen2.5-0.5B"
TOKENIZER_CONFIG = json.dumps(
    {"added_tokens_decoder": {str(i): {"content": f"<|extra_{i}|>"} for i in range(300)}},
    indent=2,
).encode()


def test_a_file_shared_by_ten_revisions_is_stored_once(database: Database) -> None:
    config = b'{"model_type": "qwen2", "hidden_size": 896}'
    for index in range(10):
        generation = json.dumps({"eos_token_id": 151643 + index}).encode()
        texts = {"config.json": config, "generation_config.json": generation}
        snap = snapshot(revision(REPO, index), texts)
        with database.session() as session:
            for data in texts.values():
                put_blob(session, git_blob_id(data), data, at=RECORDED_AT)
            assert record_revision(session, snap, [], None, processed_at=RECORDED_AT)
    with database.read_session() as session:
        manifest_keys = set(session.scalars(select(SnapshotRow.manifest_key)))
        texts = BlobRow.content_key.not_in([k for k in manifest_keys if k is not None])
        rows = session.scalar(select(func.count()).select_from(BlobRow).where(texts))
        config_rows = session.scalar(
            select(func.count()).where(BlobRow.content_key == git_blob_id(config))
        )
        total = session.scalar(select(func.sum(BlobRow.size)).where(texts))
    # one config blob plus ten distinct generation configs; the one manifest they share
    assert (rows, config_rows, len(manifest_keys)) == (11, 1, 1)
    generation_bytes = sum(
        len(json.dumps({"eos_token_id": 151643 + i}).encode()) for i in range(10)
    )
    assert total == len(config) + generation_bytes


def test_putting_the_same_blob_again_reports_it_was_known(database: Database) -> None:
    key = git_blob_id(TOKENIZER_CONFIG)
    with database.session() as session:
        assert put_blob(session, key, TOKENIZER_CONFIG, at=RECORDED_AT) is True
    with database.session() as session:
        assert put_blob(session, key, TOKENIZER_CONFIG, at=RECORDED_AT) is False
        assert get_blob(session, key) == TOKENIZER_CONFIG


def test_json_text_is_stored_compressed(database: Database) -> None:
    key = git_blob_id(TOKENIZER_CONFIG)
    with database.session() as session:
        put_blob(session, key, TOKENIZER_CONFIG, at=RECORDED_AT)
    with database.read_session() as session:
        row = session.get(BlobRow, key)
        assert row is not None
        assert row.compression == "zlib"
        assert len(row.data) == row.stored_size
        assert row.stored_size * 4 < len(TOKENIZER_CONFIG)


def test_incompressible_bytes_are_stored_as_they_are(database: Database) -> None:
    data = os.urandom(4096)
    with database.session() as session:
        put_blob(session, git_blob_id(data), data, at=RECORDED_AT)
    with database.read_session() as session:
        row = session.get(BlobRow, git_blob_id(data))
        assert row is not None and row.compression == "none"
        assert get_blob(session, git_blob_id(data)) == data


def test_oversized_blob_is_refused_and_nothing_is_stored(database: Database) -> None:
    data = b"x" * 2049
    refused = pytest.raises(BlobTooLarge, match="2,049 bytes, over the store's limit of 2,048")
    with refused, database.session() as session:
        put_blob(session, git_blob_id(data), data, limit=2048, at=RECORDED_AT)
    with database.read_session() as session:
        assert session.scalar(select(func.count()).select_from(BlobRow)) == 0


def test_unknown_blob_is_a_named_error(database: Database) -> None:
    with pytest.raises(BlobNotFound, match="f" * 40), database.read_session() as session:
        get_blob(session, "f" * 40)


def test_known_content_keys_answers_for_many_keys_in_one_query(database: Database) -> None:
    stored = [f"{i}".encode() for i in range(20)]
    with database.session() as session:
        for data in stored:
            put_blob(session, git_blob_id(data), data, at=RECORDED_AT)
    asked = [git_blob_id(d) for d in stored[:10]] + [f"{i:040x}" for i in range(200)]
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(database.engine, "before_cursor_execute", listener)
    try:
        with database.read_session() as session:
            found = known_content_keys(session, asked)
    finally:
        event.remove(database.engine, "before_cursor_execute", listener)
    assert found == {git_blob_id(d) for d in stored[:10]}
    assert len([s for s in statements if "blobs" in s]) == 1
