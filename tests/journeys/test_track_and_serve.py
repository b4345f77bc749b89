"""Journeys through `track`, `serve`, a webhook, `untrack`, `history`, `diff` and `audit`.

Each test is one person's sequence of commands on a fresh database against the Hub
emulator, asserting what that person reads. The repos are the recorded upstream
histories that showed the faults: Mistral-7B-Instruct-v0.3 (`track` then `serve`
published an "everything removed" advisory for its initial commit) and Llama-2-7b-hf
(`track --backfill` published none of its 7 advisories).
"""

from __future__ import annotations

import json
import re

from tests.daemon.harness import free_port
from tests.journeys.conftest import MISTRAL, Person

LLAMA = "meta-llama/Llama-2-7b-hf"
LLAMA_PIN = "335a02887eb6"
"""The pin of issue 37: three moderate advisories on main after it."""


def main_history(person: Person, repo_id: str) -> list[str]:
    """Main's shas as the Hub lists them, oldest first."""
    return [c.sha for c in reversed(person.emulator.history(repo_id))]


def history_blocks(text: str) -> dict[str, list[str]]:
    """`history` output as short sha -> the change lines printed under it."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if re.match(r"^[0-9a-f]{12} ", line):
            current = line[:12]
            blocks[current] = []
        elif current is not None and line.startswith("  "):
            blocks[current].append(line.strip())
    return blocks


def test_track_then_serve_diffs_every_revision_against_its_parent(person: Person) -> None:
    shas = main_history(person, MISTRAL)
    said = person.run("track", MISTRAL)
    assert said.code == 0
    # The head alone, diffed against its parent (read from the Hub), and published.
    assert said.out.startswith(
        f"{MISTRAL}: 1 new revisions recorded ({len(shas)} on main, 2 changes"
    )
    assert person.serve() == len(shas) - 1

    shown = person.run("history", MISTRAL)
    assert shown.code == 0
    blocks = history_blocks(shown.out)
    assert list(blocks) == [sha[:12] for sha in reversed(shas)]
    # The initial commit is the first revision: nothing before it was removed.
    assert blocks[shas[0][:12]] == []
    assert "config.json removed" not in shown.out and "tensors removed" not in shown.out
    assert "total scalars" not in shown.out
    # The head's own change is recorded (before: none, it was stored as a first revision).
    head = blocks[shas[-1][:12]]
    assert head[0].startswith(
        "[info] chat template text changed; the 10 probe prompts it renders on both sides "
        "render identically (2 not compared: tools"
    )
    assert head[1:] == [
        "[info] tokenizer_config.json: chat_template text 3,954 chars -> 3,959 chars; "
        "the rendered prompts say what users see",
    ]
    # `diff` of the head against its parent reads the same stored changes.
    diffed = person.run("diff", MISTRAL, shas[-2][:12], shas[-1][:12])
    assert diffed.code == 1  # like diff(1): the two revisions differ
    assert "3,954 chars -> 3,959 chars" in diffed.out

    audited = person.run("audit", f"{MISTRAL}@{shas[0][:12]}")
    assert audited.code == 1
    assert audited.out.count("x_NEURARCH-") == 5
    assert "removed" not in audited.out
    assert "cannot judge" not in audited.out


def test_track_backfill_publishes_what_it_records_and_serve_adds_nothing(person: Person) -> None:
    shas = main_history(person, LLAMA)
    said = person.run("track", LLAMA, "--backfill")
    assert said.code == 0
    assert said.out.startswith(
        f"{LLAMA}: {len(shas)} new revisions recorded ({len(shas)} on main, 35 changes, "
        "7 advisories published)"
    )
    assert person.serve() == 0  # nothing left to record, nothing published twice

    audited = person.run("audit", f"{LLAMA}@{LLAMA_PIN}")
    assert audited.code == 1
    assert "6 commits behind main" in audited.out
    assert audited.out.count("[moderate] x_NEURARCH-") == 3
    assert audited.out.rstrip().endswith("1 pins audited, 3 findings")


def test_audit_of_a_repo_nobody_tracks_says_it_cannot_judge(person: Person) -> None:
    assert person.run("track", LLAMA).code == 0
    first = main_history(person, "openai/whisper-base")[0]
    audited = person.run("audit", f"openai/whisper-base@{first[:12]}")
    assert audited.code == 3
    assert (
        "cannot judge: openai/whisper-base is not tracked here, so no advisories are "
        "published for it: run `neurarch-trace track openai/whisper-base`, or give "
        "--server URL"
    ) in audited.out
    assert audited.out.rstrip().endswith("1 pins audited, 0 findings, 1 could not be judged")

    as_json = person.run("audit", f"openai/whisper-base@{first[:12]}", "--format", "json")
    assert as_json.code == 3
    assert json.loads(as_json.out)["pins"][0]["cannot_judge"].startswith(
        "openai/whisper-base is not tracked here"
    )
    sarif = person.run("audit", f"openai/whisper-base@{first[:12]}", "--format", "sarif")
    assert sarif.code == 3
    (invocation,) = json.loads(sarif.out)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith(
        f"openai/whisper-base@{first[:12]}: cannot judge: "
    )


def test_an_advisory_server_that_does_not_answer_is_an_incomplete_audit(
    person: Person,
) -> None:
    pin = f"{LLAMA}@{LLAMA_PIN}"
    audited = person.run("audit", pin, "--server", f"http://127.0.0.1:{free_port()}")
    assert audited.code == 3
    assert audited.out == ""
    assert audited.err.startswith("neurarch-trace: could not complete the audit: ")
    assert audited.err.count("\n") == 1


def test_nothing_published_yet_is_not_a_clean_audit(person: Person) -> None:
    shas = main_history(person, MISTRAL)
    assert person.run("track", MISTRAL).code == 0
    pin = f"{MISTRAL}@{shas[1][:12]}"
    early = person.run("audit", pin)
    assert early.code == 3
    missing = len(shas) - 3  # after the pin, all but the head are not recorded yet
    assert (
        f"cannot judge: nothing published yet for {missing} of the {len(shas) - 2} "
        f"revisions after the pin (first: {shas[2][:12]})"
    ) in early.out

    person.serve()
    later = person.run("audit", pin)
    assert later.code == 1
    assert "cannot judge" not in later.out
    assert later.out.count("x_NEURARCH-") == 5


def test_the_hub_down_is_an_incomplete_audit_naming_the_pin(person: Person) -> None:
    shas = main_history(person, MISTRAL)
    assert person.run("track", MISTRAL, "--backfill").code == 0
    person.emulator.stop()
    audited = person.run("audit", f"{MISTRAL}@{shas[3][:12]}")
    assert audited.code == 3
    assert f"cannot judge: the Hub did not answer for {MISTRAL}@{shas[3][:12]}: " in audited.out
    assert "@main" not in audited.out
    assert "[high]" not in audited.out


def test_untrack_then_track_mid_backfill_records_the_head_against_its_parent(
    person: Person,
) -> None:
    shas = main_history(person, MISTRAL)
    assert person.serve(track=(MISTRAL,), stop_after=4) == 4  # stopped mid-backfill
    assert (
        person.run("untrack", MISTRAL).out
        == f"{MISTRAL}: no longer tracked (its history is kept)\n"
    )
    again = person.run("track", MISTRAL)
    assert again.code == 0
    assert f"({len(shas)} on main, 2 changes, 0 advisories published)" in again.out
    assert person.serve() == len(shas) - 5

    blocks = history_blocks(person.run("history", MISTRAL).out)
    assert len(blocks[shas[-1][:12]]) == 2
    assert blocks[shas[0][:12]] == []
    audited = person.run("audit", f"{MISTRAL}@{shas[0][:12]}")
    assert (audited.code, audited.out.count("x_NEURARCH-")) == (1, 5)


def test_track_backfill_beside_a_daemon_mid_backfill_publishes_every_revision_once(
    person: Person,
) -> None:
    assert person.serve(track=(LLAMA,), stop_after=5) == 5
    said = person.run("track", LLAMA, "--backfill")
    assert said.code == 0
    assert said.out.startswith(f"{LLAMA}: 9 new revisions recorded (14 on main, ")
    assert person.serve() == 0
    audited = person.run("audit", f"{LLAMA}@{main_history(person, LLAMA)[0][:12]}")
    assert audited.code == 1
    assert audited.out.count("x_NEURARCH-") == 7


def test_a_webhook_after_an_upstream_commit_publishes_it(person: Person) -> None:
    assert person.run("track", MISTRAL, "--backfill").code == 0
    before = main_history(person, MISTRAL)[-1]
    body = person.emulator.tree(MISTRAL)["generation_config.json"].body
    config = b"".join(body.chunks(0, body.size))
    new_config = config.replace(b'"eos_token_id": 2', b'"eos_token_id": [2, 32768]')
    assert new_config != config
    person.emulator.publish(
        MISTRAL, {"generation_config.json": new_config}, title="Stop at the tool call token"
    )
    assert person.webhook(MISTRAL) == 202
    assert person.serve() == 1
    blocks = history_blocks(person.run("history", MISTRAL).out)
    head = main_history(person, MISTRAL)[-1]
    assert any("eos_token_id" in line for line in blocks[head[:12]])
    audited = person.run("audit", f"{MISTRAL}@{before[:12]}")
    assert audited.code == 1
    assert audited.out.count("x_NEURARCH-") == 1
