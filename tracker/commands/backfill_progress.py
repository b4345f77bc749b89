"""Backfill progress on stderr, drawn by tqdm: repos done in its description, revisions counted.

On a terminal tqdm redraws one line in place at most every ``REDRAW_S``;
anywhere else (a log file, CI, a pipe) each draw goes out as a line of its
own, one every ``EVERY`` revisions, so logs get a readable trail instead of
carriage returns. Closing the bar writes the final line, with the time taken.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Never, TextIO

from tqdm import tqdm

EVERY = 25
"""Revisions between lines in a log: a 200-revision repo logs 8 lines, not 200."""
REDRAW_S = 0.1


class _Lines:
    """What tqdm writes to, turning each redraw (``\\r`` + status + padding) into one line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.strip("\r\n").rstrip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


def backfill_bar(stream: TextIO, repos_total: int) -> tqdm[Never]:
    """A bar for a backfill of ``repos_total`` repos, drawn on ``stream``."""
    if stream.isatty():
        return tqdm(desc=repos(0, repos_total), unit="rev", file=stream, mininterval=REDRAW_S)
    # a fixed stride: no redraw by time, no monitor thread shortening it
    return tqdm(
        desc=repos(0, repos_total),
        unit="rev",
        file=_Lines(stream),
        miniters=EVERY,
        mininterval=0,
        maxinterval=float("inf"),
    )


def repos(done: int, total: int) -> str:
    """The bar's description: ``backfill: 2/5 repos``."""
    return f"backfill: {done}/{total} repo" + ("" if total == 1 else "s")


def watch_backfill(
    health: Callable[[], Mapping[str, object]],
    recorded: Callable[[], float],
    stop: threading.Event,
    bar: tqdm[Never],
    repos_total: int,
    poll_s: float = 0.5,
) -> threading.Thread:
    """Show a running daemon's backfill on ``bar`` until every repo is in, then close it.

    ``health`` is the daemon's ``/healthz`` document (repos done are the tracked
    repos checked through, ``backfill_pending`` read the other way), ``recorded``
    the revisions its workers recorded, ``stop`` its stop event: the daemon is
    passed in by its parts, so this module does not stand on the daemon. When
    the daemon stops first, the line ends where it stood.
    """

    def watch() -> None:
        while True:
            now = health()
            done = _int(now["tracked"]) - _int(now["backfill_pending"])
            bar.set_description_str(repos(done, repos_total), refresh=False)
            bar.update(int(recorded()) - bar.n)
            if now["backfill"] == "done" or stop.wait(poll_s):
                bar.close()
                return

    thread = threading.Thread(target=watch, name="backfill-progress", daemon=True)
    thread.start()
    return thread


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


__all__ = ["EVERY", "REDRAW_S", "backfill_bar", "repos", "watch_backfill"]
