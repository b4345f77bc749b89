"""What a walked revision fetches from the Hub, and what it asks the store first.

A revision walked after its parent asks the store which of its new texts it holds
only for texts over ``tracker.revision.snapshot.ASK_ABOVE``: a small one is fetched
without asking, so the revision records in one transaction, and a small text another
repo stored already is fetched again, its insert ignored. A large text the store
holds is never downloaded again, and a text the walk recorded earlier (a revert) is
neither downloaded nor asked about. Transactions are counted by the engine's ``begin``
events (``tests.daemon.conftest.Transactions``), downloads by the emulator's
request log, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from storage import Database, ensure_repo, get_blob, snapshot_at
from storage.records import Revision
from tests.daemon.conftest import Transactions
from tests.storage.builders import RECORDED_AT, recorded_at
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.process import commit, prepare, remember
from tracker.revision.snapshot import ASK_ABOVE
from tracker.revision.walk import Walk
from tracker.settings import HubSettings

pytestmark = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)

REPO = "walk/fetches"
ELSEWHERE = "walk/elsewhere"
"""Another repo, recorded first, whose texts the store holds before the walk begins."""
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
CONFIG = json.dumps({"model_type": "llama", "hidden_size": 64}).encode()
GENERATION = b'{"eos_token_id": 2}'


def tokenizer_json(words: int) -> bytes:
    """A real tokenizer.json of ``words`` vocabulary entries: over ASK_ABOVE from a few thousand."""
    vocab = {"[UNK]": 0} | {f"word{index}": index + 1 for index in range(words)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # type: ignore[assignment]
    return tokenizer.to_str().encode()


def walk_history(
    database: Database,
    hub_emulator: HubEmulator,
    transactions: Transactions,
    repo: str = REPO,
) -> dict[str, tuple[Revision, list[list[str]], int]]:
    """Every revision of ``repo`` prepared and committed oldest first by one walk, as a
    backfill does: per title, the revision, the statements of each transaction it ran, and
    the files it downloaded."""
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=2, timeout=5.0)
    with database.session() as session:
        ensure_repo(session, repo, now=RECORDED_AT)
    walk = Walk()
    walked = {}
    transactions.take()
    for revision in hub.commits(repo):
        hub_emulator.stats.reset()
        prepared = prepare(database, hub, revision, walk)
        assert prepared is not None
        assert commit(database, prepared, fence=None, publish=None, clock=recorded_at)
        remember(walk, prepared)
        walked[revision.title] = (
            revision,
            transactions.take(),
            hub_emulator.stats.requests("resolve"),
        )
    return walked


def publish(
    hub_emulator: HubEmulator, steps: dict[str, dict[str, bytes]], repo: str = REPO
) -> None:
    for index, (title, files) in enumerate(steps.items()):
        hub_emulator.publish(repo, files, title=title, date=START + timedelta(minutes=index))


def stored_elsewhere(
    database: Database,
    hub_emulator: HubEmulator,
    transactions: Transactions,
    files: dict[str, bytes],
) -> dict[str, str]:
    """``files`` (path: bytes) recorded under ELSEWHERE before the walk: in the store, and in
    no revision of the walked repo. Their content keys by path."""
    publish(hub_emulator, {"upload": files}, ELSEWHERE)
    revision, _, _ = walk_history(database, hub_emulator, transactions, ELSEWHERE)["upload"]
    with database.read_session() as session:
        return dict(snapshot_at(session, ELSEWHERE, revision.sha).texts)


NEW_EOS = b'{"eos_token_id": [2, 32000]}'


def test_a_walked_revision_whose_new_texts_are_small_records_in_one_transaction(
    database: Database, hub_emulator: HubEmulator, transactions: Transactions
) -> None:
    stored_elsewhere(database, hub_emulator, transactions, {"generation_config.json": NEW_EOS})
    publish(
        hub_emulator,
        {
            "upload": {"config.json": CONFIG, "generation_config.json": GENERATION},
            "new eos": {"generation_config.json": NEW_EOS},  # another repo stored it
            "eos back": {"generation_config.json": GENERATION},  # this walk recorded it
        },
    )
    walked = walk_history(database, hub_emulator, transactions)

    shapes = {title: [len(t) for t in done] for title, (_, done, _) in walked.items()}
    # "eos back" writes no blob: its one text is the walk's own
    assert shapes == {"initial commit": [2, 5], "upload": [8], "new eos": [8], "eos back": [7]}
    for title in ("upload", "new eos", "eos back"):
        (write,) = walked[title][1]
        assert write[0] == "SELECT" and "SELECT" not in write[1:], (title, write)
    # the trade: a small text another repo stored is downloaded again rather than asked
    # about; a text the walk recorded is neither
    downloads = {title: fetched for title, (_, _, fetched) in walked.items()}
    assert downloads == {"initial commit": 0, "upload": 2, "new eos": 1, "eos back": 0}
    # and recorded as asking first would have: each stored text, once
    with database.read_session() as session:
        upload = snapshot_at(session, REPO, walked["upload"][0].sha)
        back = snapshot_at(session, REPO, walked["eos back"][0].sha)
        assert back.texts == upload.texts
        assert get_blob(session, back.texts["generation_config.json"]) == GENERATION


def test_a_large_text_the_store_holds_is_not_downloaded_again(
    database: Database, hub_emulator: HubEmulator, transactions: Transactions
) -> None:
    large, other = tokenizer_json(6000), tokenizer_json(6001)
    assert len(large) > ASK_ABOVE and len(other) > ASK_ABOVE
    elsewhere = stored_elsewhere(
        database,
        hub_emulator,
        transactions,
        {"tokenizer.json": large, "config.json": CONFIG + b" "},
    )
    publish(
        hub_emulator,
        {
            "upload": {"config.json": CONFIG, "tokenizer.json": other},
            # both stored by another repo: the small one is asked about with the large one
            "vocabulary from elsewhere": {"tokenizer.json": large, "config.json": CONFIG + b" "},
            "vocabulary back": {"tokenizer.json": other, "config.json": CONFIG},  # the walk's
        },
    )
    walked = walk_history(database, hub_emulator, transactions)

    assert walked["upload"][2] == 2
    assert [len(t) for t in walked["upload"][1]] == [1, 8]  # asked: not stored
    revision, done, downloads = walked["vocabulary from elsewhere"]
    assert downloads == 0  # the store holds both: asked, found, not fetched
    # that question and the two texts read for the differs, then the write (no blob to insert)
    assert [len(t) for t in done] == [3, 7]
    back, done, downloads = walked["vocabulary back"]
    assert (downloads, [len(t) for t in done]) == (0, [7])  # the walk's own: not even asked
    with database.read_session() as session:
        assert snapshot_at(session, REPO, revision.sha).texts == elsewhere
        assert (
            snapshot_at(session, REPO, back.sha).texts
            == snapshot_at(session, REPO, walked["upload"][0].sha).texts
        )


def test_a_small_text_the_time_budget_left_unfetched_is_taken_from_the_store(
    database: Database, hub_emulator: HubEmulator, transactions: Transactions
) -> None:
    elsewhere = stored_elsewhere(
        database, hub_emulator, transactions, {"generation_config.json": NEW_EOS}
    )
    publish(
        hub_emulator,
        {
            "upload": {"config.json": CONFIG, "generation_config.json": GENERATION},
            "new eos, late": {"generation_config.json": NEW_EOS, "vocab.json": b"{}"},
        },
    )
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=2, timeout=5.0)
    with database.session() as session:
        ensure_repo(session, REPO, now=RECORDED_AT)
    walk = Walk()
    *older, late = hub.commits(REPO)
    for revision in older:
        prepared = prepare(database, hub, revision, walk)
        assert prepared is not None
        assert commit(database, prepared, fence=None, publish=None, clock=recorded_at)
        remember(walk, prepared)
    hub_emulator.stats.reset()
    transactions.take()
    prepared = prepare(database, hub, late, walk, deadline=0.0)  # out of time at once

    assert prepared is not None
    assert hub_emulator.stats.requests("resolve") == 0
    # the stored text was not fetched without asking, so the store is asked before the
    # revision names it missing: it names it as asking first did, and only the new one is late
    # (the second statement reads it for the differ)
    assert transactions.take() == [["SELECT", "SELECT"]]
    with database.read_session() as session:
        upload = snapshot_at(session, REPO, older[1].sha)
    assert prepared.outcome.snapshot.texts == {**upload.texts, **elsewhere}
    (incomplete,) = [c for c in prepared.outcome.changes if c.kind == "incomplete"]
    assert incomplete.new == {"texts": ["vocab.json"], "headers": []}
