"""The track/history/diff/untrack commands, end to end: emulator, real database, real CLI."""

from __future__ import annotations

import json

import pytest

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

    oldest, newest = log[0]["sha"], log[-1]["sha"]
    assert main(["diff", REPO, oldest[:10], newest[:10], "--json"]) == 1
    delta = json.loads(capsys.readouterr().out)
    assert delta["old"] == oldest and delta["changes"]

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
