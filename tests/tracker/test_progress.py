"""Backfill progress: a redrawn status line on a terminal, a plain line per N revisions elsewhere."""

from __future__ import annotations

import io
import re
import sys
import time

import pytest

from tracker.cli import main
from tracker.commands.backfill_progress import EVERY, REDRAW_S, backfill_bar, repos
from tracker.hubsim import HubEmulator

REPO = "meta-llama/Llama-2-7b-hf"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_one_plain_line_per_n_revisions_and_a_final_line() -> None:
    stream = io.StringIO()
    bar = backfill_bar(stream, repos_total=2)
    bar.total = 2 * EVERY + 10
    for _ in range(2 * EVERY + 10):
        bar.update()
    bar.set_description_str(repos(1, 2), refresh=False)
    bar.close()
    bar.close()
    assert "\r" not in stream.getvalue()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4, lines  # the start, every EVERY revisions, the end
    assert lines[0].startswith("backfill: 0/2 repos: 0rev [00:00")
    assert re.match(rf"backfill: 0/2 repos: +\d+%\|.*\| {EVERY}/60 \[", lines[1]), lines[1]
    assert re.match(rf"backfill: 0/2 repos: +\d+%\|.*\| {2 * EVERY}/60 \[", lines[2]), lines[2]
    assert re.match(r"backfill: 1/2 repos: 100%\|#+\| 60/60 \[\d\d:\d\d<00:00, ", lines[3])


def test_a_terminal_gets_one_line_redrawn_in_place_at_most_every_redraw_interval() -> None:
    stream = Terminal()
    started = time.monotonic()
    bar = backfill_bar(stream, repos_total=1)
    for _ in range(2_000):
        bar.update()
    elapsed = time.monotonic() - started
    bar.set_description_str(repos(1, 1), refresh=False)
    bar.close()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    draws = text.split("\r")[1:]
    # the first draw, at most one per REDRAW_S, then the final line
    assert 2 <= len(draws) <= 2 + elapsed / REDRAW_S + 1, (len(draws), elapsed)
    assert draws[0].startswith("backfill: 0/1 repo: 0rev ")
    assert draws[-1].startswith("backfill: 1/1 repo: 2000rev [")


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
    assert re.match(rf"backfill: 1/1 repo: 100%\|#+\| {revisions}/{revisions} \[", final), final
    assert "\r" not in err
    assert main(["track", REPO]) == 0  # head only: no progress lines
    assert capsys.readouterr().err == ""
