"""What the daemon suites share: a scripted publication history, state capture, daemon processes.

The publication script is deterministic (explicit dates, fixed contents), so
two emulators given the same script hold the same shas; that is what lets a
run under faults, crashes or several instances be compared with a fault-free
run of the same history.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from storage import Database, advisories, changes_of, poll_states, revision_log, tracked_repos
from tracker.hubsim import HubEmulator

REPO_ROOT = Path(__file__).resolve().parents[2]
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Publication:
    repo_id: str
    files: dict[str, bytes]
    title: str
    date: datetime


def _config(step: int, index: int) -> bytes:
    """A small Llama config that moves with each step, so every revision has changes to find."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_attention_heads": 8,
        "num_key_value_heads": 4 if step % 3 else 8,
        "num_hidden_layers": 2 + index % 3,
        "vocab_size": 32000,
        "max_position_embeddings": 2048 * (1 + step % 4),
        "rope_theta": 10000.0 + 1000 * step,
        "torch_dtype": "bfloat16",
    }
    return json.dumps(config, indent=2).encode()


def _generation(step: int) -> bytes:
    eos: Any = 2 if step % 2 == 0 else [2, 32001]
    return json.dumps({"bos_token_id": 1, "eos_token_id": eos, "temperature": 0.6}).encode()


def publication_script(repos: int, revisions: int) -> list[Publication]:
    """``revisions`` commits on each of ``repos`` repos, interleaved by date."""
    script = []
    for step in range(revisions):
        for index in range(repos):
            files = {"config.json": _config(step, index)}
            if step % 2 == 0 or step == 1:
                files["generation_config.json"] = _generation(step)
            script.append(
                Publication(
                    repo_id=f"relia/model-{index:03d}",
                    files=files,
                    title=f"step {step}",
                    date=START + timedelta(minutes=step * repos + index),
                )
            )
    return script


def publish(emulator: HubEmulator, publications: Sequence[Publication]) -> None:
    for item in publications:
        emulator.publish(item.repo_id, item.files, title=item.title, date=item.date, author="relia")


def capture(database: Database) -> dict[str, Any]:
    """Everything the comparison looks at: revisions, their changes, advisories, repo status."""
    state: dict[str, Any] = {}
    with database.read_session() as session:
        for repo in tracked_repos(session):
            log = revision_log(session, repo.repo_id)
            state[repo.repo_id] = {
                "status": repo.status.value,
                "revisions": sorted((r.revision.sha, r.revision.title, r.on_main) for r in log),
                "changes": {
                    r.revision.sha: [
                        (c.artifact, c.path, c.kind, int(c.severity), c.message)
                        for c in changes_of(session, repo.repo_id, r.revision.sha)
                    ]
                    for r in log
                },
                "advisories": sorted(
                    (a.id, a.old_sha, a.new_sha, a.summary, a.withdrawn is not None)
                    for a in advisories(session, repo_id=repo.repo_id)
                ),
            }
    return state


def caught_up(database: Database, emulator: HubEmulator, repos: Sequence[str]) -> bool:
    """Every repo's stored head is the emulator's head and no check is failing or leased."""
    with database.read_session() as session:
        states = {s.repo_id: s for s in poll_states(session)}
    for repo_id in repos:
        state = states.get(repo_id)
        if state is None or state.last_seen_sha != emulator.head(repo_id):
            return False
    return True


def wait_for(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    processes: Sequence[DaemonProcess] = (),
) -> None:
    """Poll ``condition``; fail at once, with its log, if a daemon in ``processes`` died."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        for process in processes:
            if not process.alive():
                tail = process.log.read_text(errors="replace")[-3000:]
                raise AssertionError(f"daemon exited while waiting for {what}:\n{tail}")
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def write_config(
    path: Path,
    *,
    database_url: str,
    endpoint: str,
    repos: Sequence[str],
    port: int,
    secret: str = "s3cret",
    workers: int = 3,
    lease: str = "20s",
) -> Path:
    repo_lines = "\n".join(f'[[repos]]\nid = "{repo}"\n' for repo in repos)
    path.write_text(
        f"""
[storage]
database_url = "{database_url}"

[hub]
endpoint = "{endpoint}"

[daemon]
interval = "2s"
max_backoff = "2s"
tick = 0.3
discovery = 1
workers = {workers}
requests_per_second = 500
lease = "{lease}"
hub_timeout = "2s"

[server]
host = "127.0.0.1"
port = {port}
webhook_secret = "{secret}"

{repo_lines}
""",
        encoding="utf-8",
    )
    return path


class DaemonProcess:
    """``neurarch-trace serve [ARGS]`` in a child process, its log kept in a file."""

    def __init__(
        self,
        config: Path,
        log: Path,
        env: dict[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.log = log
        self.args = tuple(args)
        self.env = {**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1", **(env or {})}
        self.env.pop("HF_ENDPOINT", None)
        self.env.pop("NEURARCH_DATABASE_URL", None)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> DaemonProcess:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracker.cli",
                "--config",
                str(self.config),
                "serve",
                *self.args,
            ],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        handle.close()
        return self

    def wait_ready(self, timeout_s: float = 60) -> None:
        """Until the HTTP app answers /healthz (its signal handlers are in place by then)."""
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.alive():
            text = self.log.read_text(errors="replace")
            marker = text.find("serving on http://")
            if marker >= 0:
                url = text[marker + len("serving on ") :].split()[0]
                try:
                    httpx.get(f"{url}/healthz", timeout=2)
                    return
                except httpx.HTTPError:
                    pass
            time.sleep(0.2)
        raise AssertionError(f"daemon not ready after {timeout_s:.0f}s: {self.log}")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def terminate(self, timeout_s: float = 60) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout_s)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def events(self) -> Iterator[dict[str, Any]]:
        """The structured log lines (JSON objects) the process wrote."""
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            start = line.find("{")
            if start < 0:
                continue
            try:
                value = json.loads(line[start:])
            except ValueError:
                continue
            if isinstance(value, dict) and "event" in value:
                yield value
