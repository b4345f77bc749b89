"""The transient mix fails a seeded share of requests, the same ones whatever the order."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import httpx2
import pytest

from tests.hubsim.test_hubsim_command import free_port
from tracker.cli import main
from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator

REPO = "neurarch-demo/llama2-7b"


def outcome(client: httpx2.Client, url: str) -> str:
    """What a client saw: a status, a cut body, or a dropped connection."""
    try:
        response = client.get(url)
    except httpx2.RemoteProtocolError as exc:
        return "cut" if "incomplete" in str(exc) or "body" in str(exc) else "reset"
    except (httpx2.ReadError, httpx2.ConnectError):
        return "reset"
    return str(response.status_code)


def urls(endpoint: str) -> list[str]:
    files = ["config.json", "generation_config.json", "README.md"]
    return [f"{endpoint}/api/models/{REPO}"] + [
        f"{endpoint}/{REPO}/resolve/main/{name}" for name in files
    ]


def outcomes(seed: int, order: list[int], repeats: int) -> dict[tuple[int, int], str]:
    """(url index, sending) -> outcome, sending each URL ``repeats`` times in ``order``."""
    emulator = HubEmulator(HISTORIES)
    emulator.faults.transient_mix(0.5, seed=seed, slow_s=(0.0, 0.0))
    emulator.start()
    seen: dict[tuple[int, int], str] = {}
    try:
        targets = urls(emulator.endpoint)
        with httpx2.Client(timeout=5) as client:
            for sending in range(repeats):
                for index in order:
                    seen[(index, sending)] = outcome(client, targets[index])
    finally:
        emulator.stop()
    return seen


def test_the_same_seed_fails_the_same_requests_in_any_order() -> None:
    forward = outcomes(5, [0, 1, 2, 3], repeats=12)
    backward = outcomes(5, [3, 2, 1, 0], repeats=12)
    assert forward == backward
    assert outcomes(6, [0, 1, 2, 3], repeats=12) != forward


def test_the_mix_fails_its_share_with_every_kind() -> None:
    emulator = HubEmulator(HISTORIES)
    mix = emulator.faults.transient_mix(0.25, seed=1, slow_s=(0.0, 0.0))
    emulator.start()
    try:
        with httpx2.Client(timeout=5) as client:
            for sending in range(300):
                outcome(client, f"{emulator.endpoint}/api/models/{REPO}?n={sending}")
    finally:
        emulator.stop()
    kinds = mix.counts()
    assert set(kinds) == {"500", "503", "429", "reset", "truncate", "slow"}
    assert 0.18 <= sum(kinds.values()) / 300 <= 0.32
    statuses = emulator.stats.by_status()
    assert statuses[500] == kinds["500"] and statuses[503] == kinds["503"]
    assert statuses[429] == kinds["429"] and statuses[0] == kinds["reset"]


def test_a_cut_body_sends_half_its_content_length() -> None:
    emulator = HubEmulator(HISTORIES)
    mix = emulator.faults.transient_mix(1.0, seed=2, slow_s=(0.0, 0.0))
    emulator.start()
    seen: Counter[str] = Counter()
    try:
        with httpx2.Client(timeout=5) as client:
            for sending in range(60):
                url = f"{emulator.endpoint}/{REPO}/resolve/main/config.json?n={sending}"
                seen[outcome(client, url)] += 1
    finally:
        emulator.stop()
    size = len(emulator.tree(REPO)["config.json"].text() or b"")
    cut = [r for r in emulator.stats.records("resolve") if r.status == 200 and r.bytes_sent < size]
    assert cut and all(r.bytes_sent == size // 2 for r in cut)
    assert mix.counts()["truncate"] == len(cut) == seen["cut"]


def test_rate_limit_answers_name_their_wait() -> None:
    emulator = HubEmulator(HISTORIES)
    emulator.faults.transient_mix(1.0, seed=3, retry_after=4, slow_s=(0.0, 0.0))
    emulator.start()
    try:
        with httpx2.Client(timeout=5) as client:
            for sending in range(80):
                try:
                    response = client.get(f"{emulator.endpoint}/api/models/{REPO}?n={sending}")
                except httpx2.HTTPError:
                    continue
                if response.status_code == 429:
                    assert response.headers["Retry-After"] == "4"
                    assert response.headers["RateLimit"] == '"api";r=0;t=4'
                    return
    finally:
        emulator.stop()
    pytest.fail("no 429 in 80 requests at a 100% fault rate")


def test_hubsim_command_injects_the_share_it_is_given() -> None:
    port = free_port()
    command = [sys.executable, "-m", "tracker.cli", "hubsim", "--corpus", str(HISTORIES)]
    command += ["--port", str(port), "--faults", "0.3", "--fault-seed", "9"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "failing 30% of requests (seed 9)" in line
        seen: Counter[str] = Counter()
        with httpx2.Client(timeout=10) as client:
            for sending in range(60):
                url = f"http://127.0.0.1:{port}/api/models/{REPO}/refs?n={sending}"
                seen["ok" if outcome(client, url) == "200" else "fault"] += 1
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    # Slow answers (1-3 s) are faults that still answer 200: 5/6 of 30% fail, ~15 of 60.
    assert 5 <= seen["fault"] <= 30


@pytest.mark.parametrize("rate", ["-0.1", "1.5"])
def test_a_fault_rate_outside_zero_to_one_is_a_usage_error(
    rate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hubsim", "--corpus", str(HISTORIES), "--port", "0", "--faults", rate]) == 2
    error = capsys.readouterr().err
    assert "--faults" in error and len(error.strip().splitlines()) == 1
