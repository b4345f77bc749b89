"""Backfill progress for a person watching: repos and revisions done, and the rate.

On a terminal (the stream is a TTY) one status line is redrawn in place, at
most every ``redraw_s``; anywhere else (a log file, CI, a pipe) a plain line
is written every ``every`` revisions, so logs get a readable trail instead
of carriage returns. ``close`` always writes the final line. The clock is
passed in, so tests drive it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

DEFAULT_EVERY = 25
"""Revisions between plain lines: a 200-revision repo logs 8 lines, not 200."""


@dataclass
class Progress:
    """Counts what a backfill has done and shows it on ``stream``."""

    stream: TextIO
    repos_total: int | None = None
    revisions_total: int | None = None
    every: int = DEFAULT_EVERY
    redraw_s: float = 0.1
    clock: Callable[[], float] = time.monotonic
    label: str = "backfill"
    repos: int = 0
    revisions: int = 0
    _started: float = field(init=False)
    _drawn_at: float | None = field(init=False, default=None)
    _logged_at: int = field(init=False, default=0)
    _width: int = field(init=False, default=0)
    _closed: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self._started = self.clock()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())

    def revision_done(self, count: int = 1) -> None:
        """``count`` more revisions recorded (or found already stored)."""
        self.update(revisions=self.revisions + count)

    def repo_done(self) -> None:
        """One more repo walked through."""
        self.update(repos=self.repos + 1)

    def update(self, *, repos: int | None = None, revisions: int | None = None) -> None:
        """Set the totals done so far (for callers that poll rather than count)."""
        if repos is not None:
            self.repos = repos
        if revisions is not None:
            self.revisions = revisions
        if self.tty:
            now = self.clock()
            if self._drawn_at is None or now - self._drawn_at >= self.redraw_s:
                self._draw(now)
        elif self.revisions - self._logged_at >= self.every:
            self._logged_at = self.revisions - self.revisions % self.every
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        """``backfill: 2/5 repos, 120/300 revisions, 14.2 rev/s``."""
        elapsed = max(self.clock() - self._started, 1e-9)
        parts = [
            _count(self.repos, self.repos_total, "repo"),
            _count(self.revisions, self.revisions_total, "revision"),
            f"{self.revisions / elapsed:.1f} rev/s",
        ]
        return f"{self.label}: " + ", ".join(parts)

    def close(self) -> None:
        """Write the final line (ending the TTY status line); idempotent."""
        if self._closed:
            return
        self._closed = True
        elapsed = self.clock() - self._started
        final = f"{self.line()} in {elapsed:.1f}s"
        if self.tty:
            self.stream.write("\r" + final.ljust(self._width) + "\n")
        else:
            self.stream.write(final + "\n")
        self.stream.flush()

    def _draw(self, now: float) -> None:
        text = self.line()
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(text))
        self._drawn_at = now


def watch_backfill(
    health: Callable[[], Mapping[str, object]],
    recorded: Callable[[], float],
    stop: threading.Event,
    progress: Progress,
    poll_s: float = 0.5,
) -> threading.Thread:
    """Show a running daemon's backfill on ``progress`` until every repo is in, then close it.

    ``health`` is the daemon's ``/healthz`` document (repos done are the tracked
    repos checked through, ``backfill_pending`` read the other way), ``recorded``
    the revisions its workers recorded, ``stop`` its stop event: the daemon is
    passed in by its parts, so this room does not stand on the daemon. When the
    daemon stops first, the line ends where it stood.
    """

    def watch() -> None:
        while True:
            now = health()
            progress.update(
                repos=_int(now["tracked"]) - _int(now["backfill_pending"]),
                revisions=int(recorded()),
            )
            if now["backfill"] == "done" or stop.wait(poll_s):
                progress.close()
                return

    thread = threading.Thread(target=watch, name="backfill-progress", daemon=True)
    thread.start()
    return thread


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


def _count(done: int, total: int | None, noun: str) -> str:
    shown = f"{done}/{total}" if total is not None else str(done)
    plural = noun if (total if total is not None else done) == 1 else noun + "s"
    return f"{shown} {plural}"


__all__ = ["DEFAULT_EVERY", "Progress", "watch_backfill"]
