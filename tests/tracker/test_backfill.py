"""Backfills through the real huggingface_hub client against the Hub emulator, into real databases.

The expected changes come from reading the recorded upstream files (the
corpus MANIFEST and the files themselves), not from the tracker's output.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import unquote

import pytest

from storage import Database, changes_of, ensure_repo, revisions, snapshot_at
from storage.records import Change, Severity
from tests.storage.builders import RECORDED_AT, recorded_at
from tracker.diff.files import suffix
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill, record_one
from tracker.settings import HubSettings

NAMED_CHANGES = (
    "meta-llama/Llama-2-7b-hf",
    "tiiuae/falcon-7b-instruct",
    "meta-llama/Llama-3.2-3B-Instruct",
    "mattshumer/Reflection-Llama-3.1-70B",
    "mistralai/Mistral-7B-Instruct-v0.3",
    "meta-llama/Llama-2-7b-chat-hf",
    "openai/clip-vit-large-patch14",
)


def changes_at(database: Database, repo_id: str, prefix: str) -> list[Change]:
    with database.read_session() as session:
        (sha,) = [r.sha for r in revisions(session, repo_id) if r.sha.startswith(prefix)]
        return changes_of(session, repo_id, sha)


def one(changes: list[Change], **fields: object) -> Change:
    found = [c for c in changes if all(getattr(c, k) == v for k, v in fields.items())]
    assert len(found) == 1, (fields, [c.message for c in changes])
    return found[0]


def backfill_all(database: Database, emulator: HubEmulator, repos: list[str]) -> None:
    hub = Hub(connect(HubSettings(emulator.endpoint)), max_retries=0)
    for repo in repos:
        report = backfill(database, hub, repo, clock=recorded_at)
        assert report.recorded == report.revisions == len(emulator.history(repo)), report


@pytest.mark.slow  # corpus-wide: over 20 s
def test_real_upstream_changes_are_found_and_worded_right(
    hub_emulator: HubEmulator, database: Database
) -> None:
    backfill_all(database, hub_emulator, list(NAMED_CHANGES))

    context = one(changes_at(database, "meta-llama/Llama-2-7b-hf", "335a028"), path="config.json")
    assert (context.old, context.new, context.severity) == (2048, 4096, Severity.HIGH)
    assert "max_position_embeddings 2048 -> 4096" in context.message

    falcon = "tiiuae/falcon-7b-instruct"  # renamed, reverted the next day, renamed again
    for prefix, old, new in (
        ("f8dac3f", "RefinedWebModel", "falcon"),
        ("eb410fb", "falcon", "RefinedWebModel"),
        ("cf4b3c4", "RefinedWebModel", "falcon"),
    ):
        rename = one(changes_at(database, falcon, prefix), path="config.json", old=old, new=new)
        assert f"model_type {old} -> {new}" in rename.message
        assert rename.severity is Severity.HIGH
    stop = one(changes_at(database, falcon, "f8dac3f"), path="generation_config.json", old=2)
    assert stop.new == 11 and stop.severity is Severity.HIGH
    assert "eos_token_id 2 -> 11" in stop.message

    (rope,) = changes_at(database, "meta-llama/Llama-3.2-3B-Instruct", "f6dcb8a")
    assert rope.message.startswith("config.json: rope_scaling") and rope.severity is Severity.HIGH
    assert (rope.old["factor"], rope.new["factor"]) == (8.0, 32.0)

    reflection = changes_at(database, "mattshumer/Reflection-Llama-3.1-70B", "ccbd8fd")
    eos = one(reflection, path="generation_config.json", old=[128001, 128008, 128009])
    assert eos.new == [128001, 128009] and eos.severity is Severity.HIGH
    # cbbe14f's tokenizer_config (the one in force) names id 128008 <|reserved_special_token_4|>.
    assert "generation no longer stops at <|reserved_special_token_4|>" in eos.message

    mistral_v03 = changes_at(database, "mistralai/Mistral-7B-Instruct-v0.3", "b85b5dd")
    template = one(mistral_v03, artifact="chat_template", kind="rendering_changed")
    assert template.severity is Severity.HIGH
    # the text itself is recorded too, at info: the rendered prompts are what users see
    text = one(mistral_v03, artifact="chat_template", kind="template_source")
    assert text.severity is Severity.INFO
    assert text.message.startswith("tokenizer_config.json: chat_template text 470 chars -> 473")
    # the excerpt is aligned on the first difference: the space before [/INST] is gone
    assert 'after …"pital of France?": " " removed, then "[/INST]"' in template.message

    for repo, prefix, line in (
        ("meta-llama/Llama-2-7b-chat-hf", "bd90846", 18),
        ("openai/clip-vit-large-patch14", "eb96ff9", 88),
    ):
        broken = one(changes_at(database, repo, prefix), path="config.json", kind="parse_error")
        assert f"invalid JSON at line {line}" in broken.message

    assert_no_unchanged_file_fetched_twice(hub_emulator, database)
    assert_no_weight_body_fetched(hub_emulator, database)


@pytest.mark.slow
def test_every_corpus_history_backfills_without_error(
    hub_emulator: HubEmulator, database: Database
) -> None:
    backfill_all(database, hub_emulator, hub_emulator.repo_ids())
    assert_no_unchanged_file_fetched_twice(hub_emulator, database)
    assert_no_weight_body_fetched(hub_emulator, database)


def resolve_gets(emulator: HubEmulator) -> list[tuple[str, str, str, int, str | None]]:
    """(repo, revision, path, bytes, range) of every GET on a resolve URL."""
    out = []
    for record in emulator.stats.records("resolve"):
        if record.method != "GET":
            continue
        org, name, _, revision, path = record.path.split("?")[0].lstrip("/").split("/", 4)
        out.append(
            (f"{org}/{name}", unquote(revision), unquote(path), record.bytes_sent, record.range)
        )
    return out


def assert_no_unchanged_file_fetched_twice(emulator: HubEmulator, database: Database) -> None:
    fetched: Counter[tuple[str, str]] = Counter()
    with database.read_session() as session:
        for repo, sha, path, _, byte_range in resolve_gets(emulator):
            if byte_range is None:
                files = {f.path: f for f in snapshot_at(session, repo, sha).files}
                fetched[(repo, files[path].content_key)] += 1
    assert fetched, "the backfill downloaded nothing"
    assert max(fetched.values()) == 1, [k for k, n in fetched.items() if n > 1]


def assert_no_weight_body_fetched(emulator: HubEmulator, database: Database) -> None:
    served: Counter[tuple[str, str, str]] = Counter()
    sizes: dict[tuple[str, str, str], int] = {}
    with database.read_session() as session:
        for repo, sha, path, sent, byte_range in resolve_gets(emulator):
            if suffix(path) in {".safetensors", ".bin", ".pt", ".pth", ".gguf"}:
                assert byte_range is not None, (repo, path)
                served[(repo, sha, path)] += sent
                files = {f.path: f for f in snapshot_at(session, repo, sha).files}
                sizes[(repo, sha, path)] = files[path].size
    for key, sent in served.items():
        assert sent < sizes[key], (key, sent, sizes[key])


def test_backfill_resumes_and_records_nothing_twice(
    hub_emulator: HubEmulator, database: Database
) -> None:
    hub = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0)
    repo = "meta-llama/Llama-2-7b-hf"
    history = hub.commits(repo)
    hub_emulator.stats.reset()
    with database.session() as session:
        ensure_repo(session, repo, now=RECORDED_AT)
    for revision in history[:3]:  # a run that stopped after three revisions
        record_one(database, hub, revision, clock=recorded_at)
    report = backfill(database, hub, repo, clock=recorded_at)
    assert report.recorded == len(history) - 3
    assert backfill(database, hub, repo, clock=recorded_at).recorded == 0
    with database.read_session() as session:
        assert sorted(r.sha for r in revisions(session, repo)) == sorted(r.sha for r in history)
    assert_no_unchanged_file_fetched_twice(hub_emulator, database)
