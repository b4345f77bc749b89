"""The track/history/diff/untrack commands, end to end: emulator, real database, real CLI."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import pytest

from storage import open_database
from storage.schema_version import is_current, shipped_head
from tracker.cli import main
from tracker.hubsim import HubEmulator

REPO = "meta-llama/Llama-2-7b-hf"


@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, hub_emulator: HubEmulator, database_url: str
) -> HubEmulator:
    monkeypatch.setenv("HF_ENDPOINT", hub_emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATABASE_URL", database_url)
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    return hub_emulator


def test_track_history_diff_untrack(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["track", REPO, "--backfill"]) == 0
    revisions = len(cli_env.history(REPO))
    assert f"{REPO}: {revisions} new revisions recorded" in capsys.readouterr().out

    assert main(["history", REPO, "--json"]) == 0
    log = json.loads(capsys.readouterr().out)
    assert len(log) == revisions
    bump = next(r for r in log if r["sha"].startswith("335a028"))
    assert any("max_position_embeddings 2048 -> 4096" in c["message"] for c in bump["changes"])

    dates = [r["date"] for r in log]
    assert dates == sorted(dates, reverse=True)  # newest first, as git log
    assert log[0]["sha"] == cli_env.head(REPO)
    newest, oldest = log[0]["sha"], log[-1]["sha"]
    assert main(["diff", REPO, oldest[:10], newest[:10], "--json"]) == 1
    delta = json.loads(capsys.readouterr().out)
    assert delta["old"] == oldest and delta["new"] == newest and delta["changes"]

    assert main(["untrack", REPO]) == 0
    assert "no longer tracked" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["track", "not a repo"], "ORG/NAME"),
        (["history", "never/tracked"], "not tracked"),
        (["untrack", "never/tracked"], "not"),
        (["track", "no-such/repo"], "repo not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_diff_refuses_old_newer_than_new_and_names_the_order_that_works(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["track", REPO, "--backfill"]) == 0
    newest, oldest = cli_env.history(REPO)[0].sha, cli_env.history(REPO)[-1].sha
    capsys.readouterr()
    assert main(["diff", REPO, newest[:10], oldest[:10]]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "is newer than NEW" in captured.err
    assert f"neurarch-trace diff {REPO} {oldest[:12]} {newest[:12]}" in captured.err


def test_diff_of_a_revision_and_its_parent_is_what_history_recorded(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["track", REPO, "--backfill"]) == 0
    capsys.readouterr()
    assert main(["history", REPO, "--json"]) == 0
    log = json.loads(capsys.readouterr().out)
    compared = 0
    for child, parent in itertools.pairwise(log):
        assert main(["diff", REPO, parent["sha"], child["sha"], "--json"]) == (
            1 if child["changes"] else 0
        )
        assert json.loads(capsys.readouterr().out)["changes"] == child["changes"]
        compared += 1
    assert compared == len(cli_env.history(REPO)) - 1


def test_reading_commands_do_not_load_alembic_on_a_current_database(
    cli_env: HubEmulator, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["track", REPO, "--backfill"]) == 0
    head = cli_env.head(REPO)
    parent = cli_env.history(REPO)[1].sha
    for argv in (["history", REPO], ["diff", REPO, parent, head]):
        code = (
            "import sys\n"
            "from tracker.cli import main\n"
            f"main({argv!r})\n"
            "print('alembic' in sys.modules, file=sys.stderr)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "NEURARCH_DATABASE_URL": database_url},
        )
        assert done.stderr.strip().splitlines()[-1] == "False", (argv, done.stderr)
        assert done.stdout.startswith(head[:12] if argv[0] == "history" else REPO)


def test_a_database_behind_the_shipped_schema_is_not_current(database_url: str) -> None:
    database = open_database(database_url)
    try:
        assert not is_current(database.engine)  # empty: no alembic_version yet
        database.migrate()
        assert shipped_head() == database.schema_revision()
        assert is_current(database.engine)
    finally:
        database.close()
