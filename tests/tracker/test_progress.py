"""Backfill progress: a redrawn status line on a terminal, a plain line per N revisions elsewhere."""

from __future__ import annotations

import io
import sys

import pytest

from tracker.cli import main
from tracker.hubsim import HubEmulator
from tracker.revision.progress import Progress

REPO = "meta-llama/Llama-2-7b-hf"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_one_plain_line_per_n_revisions_and_a_final_line() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, repos_total=2, revisions_total=7, every=3, clock=clock)
    for _ in range(7):
        clock.now += 0.5
        progress.revision_done()
    progress.repo_done()
    progress.close()
    progress.close()
    assert "\r" not in stream.getvalue()
    assert stream.getvalue().splitlines() == [
        "backfill: 0/2 repos, 3/7 revisions, 2.0 rev/s",
        "backfill: 0/2 repos, 6/7 revisions, 2.0 rev/s",
        "backfill: 1/2 repos, 7/7 revisions, 2.0 rev/s in 3.5s",
    ]


def test_a_terminal_gets_one_line_redrawn_in_place_at_most_every_redraw_interval() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress(stream, repos_total=1, redraw_s=1.0, clock=clock)
    for _ in range(10):
        clock.now += 0.25
        progress.revision_done()
    progress.repo_done()
    progress.close()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith(" in 2.5s\n")
    draws = text.split("\r")[1:]
    assert len(draws) == 4  # the first revision, then once a second, then the final line
    assert draws[0] == "backfill: 0/1 repo, 1 revision, 4.0 rev/s"
    assert draws[-1].startswith("backfill: 1/1 repo, 10 revisions, 4.0 rev/s in 2.5s")


def test_track_backfill_reports_progress_on_stderr(
    monkeypatch: pytest.MonkeyPatch,
    hub_emulator: HubEmulator,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub_emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATABASE_URL", database_url)
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    assert main(["track", REPO, "--backfill"]) == 0
    revisions = len(hub_emulator.history(REPO))
    err = capsys.readouterr().err
    assert not sys.stderr.isatty()
    final = err.splitlines()[-1]
    assert final.startswith(f"backfill: 1/1 repo, {revisions}/{revisions} revisions, ")
    assert " rev/s in " in final and "\r" not in err
    assert main(["track", REPO]) == 0  # head only: no progress lines
    assert capsys.readouterr().err == ""
