"""The headline journey through a real `neurarch-trace serve` process (slow: it starts one).

`track` then `serve` on Mistral-7B-Instruct-v0.3 must not publish a HIGH "everything removed"
advisory for the initial commit by diffing it against the head `track` recorded. Here the
daemon is the command a person runs, in its own process, over the same database.
"""

from __future__ import annotations

from pathlib import Path

from storage import open_database
from tests.daemon.harness import DaemonProcess, caught_up, free_port, wait_for, write_config
from tests.journeys.conftest import MISTRAL, Person


def test_track_then_a_real_serve_publishes_no_removal_advisory(
    person: Person, tmp_path: Path
) -> None:
    shas = [c.sha for c in reversed(person.emulator.history(MISTRAL))]
    assert person.run("track", MISTRAL).code == 0
    config = write_config(
        tmp_path / "serve.toml",
        database_url=person.database_url,
        endpoint=person.emulator.endpoint,
        repos=[MISTRAL],
        port=free_port(),
    )
    daemon = DaemonProcess(config, tmp_path / "serve.log").start()
    database = open_database(person.database_url)
    try:
        wait_for(
            lambda: caught_up(database, person.emulator, [MISTRAL]), 180, "the backfill", [daemon]
        )
        assert daemon.terminate() == 0
    finally:
        if daemon.alive():
            daemon.kill()
        database.close()
    recorded = [e for e in daemon.events() if e["event"] == "revision_recorded"]
    assert len(recorded) == len(shas) - 1
    shown = person.run("history", MISTRAL)
    assert shown.code == 0
    assert "config.json removed" not in shown.out and "tensors removed" not in shown.out
    audited = person.run("audit", f"{MISTRAL}@{shas[0][:12]}")
    assert (audited.code, audited.out.count("x_NEURARCH-")) == (1, 5)
