"""``neurarch-trace hubsim`` serves a corpus, and refuses a bad one in one line."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tracker.cli import main
from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_missing_corpus_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hubsim", "--corpus", str(tmp_path), "--port", "0"]) == 2
    error = capsys.readouterr().err
    assert "MANIFEST.json" in error and len(error.strip().splitlines()) == 1


def test_out_of_range_port_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["hubsim", "--corpus", str(tmp_path), "--port", "70000"]) == 2


def test_command_serves_the_demo_histories() -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "tracker.cli",
        "hubsim",
        "--corpus",
        str(HISTORIES),
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"http://127.0.0.1:{port}" in line
        response = httpx2.get(f"http://127.0.0.1:{port}/api/models/neurarch-demo/llama2-7b")
        assert response.status_code == 200
        assert response.json()["sha"] == HubEmulator(HISTORIES).head("neurarch-demo/llama2-7b")
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_demo_histories_expose_readme_front_matter() -> None:
    emulator = HubEmulator(HISTORIES)
    emulator.start()
    try:
        body = httpx2.get(f"{emulator.endpoint}/api/models/neurarch-demo/llama2-7b").json()
    finally:
        emulator.stop()
    assert body["cardData"]["license"] == "llama2"  # from the README front matter
    assert body["pipeline_tag"] == "text-generation"
    assert "license:llama2" in body["tags"]


def test_a_manifest_path_outside_the_corpus_is_refused_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "org" / "name" / "abc").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("not for the Hub")
    entry = (
        '[{"repo_id": "org/name", "revision": "abc", "date": "2024-01-01T00:00:00+00:00", '
        '"file": "../../../../secret.txt", "notes": "commit \'x\' by y (main)"}]'
    )
    (corpus / "MANIFEST.json").write_text(entry)
    assert main(["hubsim", "--corpus", str(corpus), "--port", "0"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "'../../../../secret.txt' leaves the repo" in error
