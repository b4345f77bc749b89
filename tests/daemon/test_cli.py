"""``neurarch-trace demo`` and ``serve`` as a user runs them: real processes, real ports."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from storage import deliveries, get_subscription, open_database, revisions, tracked_repos
from tests.daemon.harness import REPO_ROOT, free_port
from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_demo_backfills_every_shipped_repo_and_reports_done(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "NEURARCH_DATA_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "demo", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health: dict[str, object] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and health.get("backfill") != "done":
            time.sleep(0.5)
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz").json()
            except httpx.HTTPError:
                continue
        assert health.get("backfill") == "done", health
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
        assert process.returncode == 0, output
    finally:
        if process.poll() is None:
            process.kill()
    assert f"http://127.0.0.1:{port}/" in output
    expected = HubEmulator(HISTORIES)
    repos = len(expected.repo_ids())
    # stderr is a pipe here, not a terminal: the final progress line, no carriage returns
    assert re.search(
        rf"backfill: \d+/{repos} repos: \d+rev \[[\d:]+, [\d.?]+(rev/s|s/rev)\]\n", output
    )
    assert "\r" not in output
    # the reading command the demo prints, typed as printed, reads the demo's history
    (read,) = re.findall(
        r"^read: +NEURARCH_DATABASE_URL=(\S+) neurarch-trace (history \S+)", output, re.M
    )
    history = subprocess.run(
        [sys.executable, "-m", "tracker.cli", *read[1].split()],
        cwd=REPO_ROOT,
        env={**env, "NEURARCH_DATABASE_URL": shlex.split(read[0])[0]},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert history.returncode == 0, history.stderr
    assert "Extend context to 128k with llama3 rope scaling" in history.stdout
    database = open_database(f"sqlite:///{tmp_path / 'demo.db'}")
    try:
        with database.read_session() as session:
            tracked = [r.repo_id for r in tracked_repos(session)]
            assert tracked == expected.repo_ids()
            for repo_id in tracked:
                stored = {r.sha for r in revisions(session, repo_id)}
                assert stored == {c.sha for c in expected.history(repo_id)}
            subscription = get_subscription(session, "demo-full-context")
            alerts = {
                (d.repo_id, (d.sha or "")[:7]): d.payload["summary"]
                for d in deliveries(session, subscription.id)
                if d.channel == "feed" and d.payload["kind"] == "fit"
            }
    finally:
        database.close()
    # Llama-2's context 2048 -> 4096 and the 128k rope scaling, as the shipped subscription sees them
    longer = alerts[("neurarch-demo/llama2-7b", "2c19299")]
    assert "2,048 -> 4,096 tokens on L4 24GB: 18.56 GiB -> 24.00 GiB, no longer fits" in longer
    assert "largest batch now 2" in longer
    rope = alerts[("neurarch-demo/llama2-7b", "5918770")]
    assert "on A100 80GB" in rope and "no longer fits" in rope


def test_serve_with_a_bad_config_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[daemon]\ninterval = "soon"\n', encoding="utf-8")
    result = run_cli("--config", str(config), "serve")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "daemon.interval" in result.stderr and "Traceback" not in result.stderr


def test_serve_rejects_a_bad_repo_id_before_starting(tmp_path: Path) -> None:
    env = {"NEURARCH_DATA_DIR": str(tmp_path)}
    result = run_cli("serve", "--track", "not a repo", env=env)
    assert result.returncode == 2
    assert "not a repo" in result.stderr and "Traceback" not in result.stderr
