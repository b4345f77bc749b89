"""How a person reaches the Hub: saved tokens, offline mode, a Hub that is down, legacy ids.

Each test runs the installed command in a fresh process against the Hub
emulator, as a person types it: huggingface_hub reads ``HF_HOME``,
``HF_TOKEN_PATH`` and ``HF_HUB_OFFLINE`` when it is imported, so only a new
process shows what they do.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.daemon.harness import free_port
from tracker.hubsim import HubEmulator

GATED = "meta-llama/Llama-2-7b-hf"
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def person(hub_emulator: HubEmulator, tmp_path: Path) -> Run:
    """``neurarch-trace ARGS`` with a fresh HF_HOME and data directory, and no token set."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HUGGINGFACE_", "NEURARCH_"))
    }
    base |= {
        "HF_ENDPOINT": hub_emulator.endpoint,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "NEURARCH_DATA_DIR": str(tmp_path / "data"),
    }

    def run(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tracker.cli", *argv],
            env=base | env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


def source_of(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert done.returncode == 0, done.stderr
    source: dict[str, str] = json.loads(done.stdout)["source"]
    return source


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def test_a_token_saved_by_hf_auth_login_reaches_the_hub(
    person: Run, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    hub_emulator.set_gated(GATED, "manual", approved=["hf_saved"])
    assert "gated" in one_line(person("plan", GATED))
    (tmp_path / "hf-home").mkdir()
    (tmp_path / "hf-home" / "token").write_text("hf_saved\n")  # what `hf auth login` writes
    assert source_of(person("plan", GATED, "--json"))["revision"] == hub_emulator.head(GATED)
    tracked = person("track", GATED)
    assert tracked.returncode == 0, tracked.stderr
    assert tracked.stdout.startswith(f"{GATED}: 1 new revisions recorded")


def test_a_token_file_named_by_hf_token_path_reaches_the_hub(
    person: Run, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    hub_emulator.set_gated(GATED, "manual", approved=["hf_elsewhere"])
    token_file = tmp_path / "secrets" / "hf"
    token_file.parent.mkdir()
    token_file.write_text("hf_elsewhere")
    planned = person("plan", GATED, "--json", HF_TOKEN_PATH=str(token_file))
    assert source_of(planned)["revision"] == hub_emulator.head(GATED)


def test_an_online_plan_leaves_the_cache_an_offline_plan_reads(
    person: Run, hub_emulator: HubEmulator
) -> None:
    repo = "google-bert/bert-base-uncased"
    online = source_of(person("plan", repo, "--json"))
    hub_emulator.stats.reset()
    offline = source_of(person("plan", repo, "--json", HF_HUB_OFFLINE="1"))
    assert offline["revision"] == online["revision"] == hub_emulator.head(repo)
    assert hub_emulator.stats.records() == []
    down = person("plan", repo, "--json", HF_ENDPOINT=f"http://127.0.0.1:{free_port()}")
    assert source_of(down)["revision"] == online["revision"]  # the cache answers, as the library's


def test_offline_at_a_planned_sha_needs_no_header_request_and_ends_in_no_traceback(
    person: Run, hub_emulator: HubEmulator
) -> None:
    repo = "google-bert/bert-base-uncased"  # one model.safetensors: its header is never cached
    sha = hub_emulator.head(repo)
    assert source_of(person("plan", f"{repo}@{sha}", "--json"))["revision"] == sha
    offline = person("plan", f"{repo}@{sha}", HF_HUB_OFFLINE="1")  # was OfflineModeIsEnabled
    assert offline.returncode == 0, offline.stderr
    assert "Traceback" not in offline.stderr


def test_offline_without_the_files_cached_is_one_line(person: Run) -> None:
    line = one_line(person("plan", "google-bert/bert-base-uncased", HF_HUB_OFFLINE="1"))
    assert "HF_HUB_OFFLINE is set and the HF cache does not hold it" in line


@pytest.mark.parametrize("command", ["plan", "track"])
def test_an_unreachable_hub_gives_up_within_seconds_in_one_line(person: Run, command: str) -> None:
    started = time.monotonic()
    done = person(
        command, "google-bert/bert-base-uncased", HF_ENDPOINT=f"http://127.0.0.1:{free_port()}"
    )
    seconds = time.monotonic() - started
    line = one_line(done)
    assert "Retrying in" not in done.stderr
    assert re.search(r"ConnectError: .* \(gave up after \d tries in \d+\.\d s", line), line
    assert seconds < 15, seconds  # a process start included; plan took 35 s with 11 retry lines


@pytest.mark.parametrize(
    "typed",
    [
        "gpt2",
        "hf://openai-community/gpt2",
        "hf://models/openai-community/gpt2@main",
        "https://huggingface.co/openai-community/gpt2/tree/main",
    ],
)
def test_every_command_reads_a_repo_reference_as_huggingface_hub_does(
    person: Run, hub_emulator: HubEmulator, typed: str
) -> None:
    repo = "openai-community/gpt2"
    hub_emulator.alias_repo("gpt2", repo)
    text = typed.replace("https://huggingface.co", hub_emulator.endpoint)  # a mirror's URL
    assert source_of(person("plan", text, "--json"))["repo_id"] == repo
    tracked = person("track", text)
    assert tracked.returncode == 0, tracked.stderr
    assert tracked.stdout.startswith(f"{repo}: ")
    history = person("history", text, "--json")
    assert history.returncode == 0, history.stderr
    assert json.loads(history.stdout)[0]["sha"] == hub_emulator.head(repo)


def test_audit_scans_legacy_ids_in_source_under_their_org_name(
    person: Run, hub_emulator: HubEmulator, tmp_path: Path
) -> None:
    hub_emulator.alias_repo("bert-base-uncased", "google-bert/bert-base-uncased")
    source = tmp_path / "src"
    source.mkdir()
    (source / "app.py").write_text(
        'from transformers import AutoModel\nAutoModel.from_pretrained("bert-base-uncased")\n'
    )
    assert person("track", "google-bert/bert-base-uncased").returncode == 0  # a local database
    done = person("audit", "--scan-src", str(source), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    pins = {pin["repo_id"] for pin in json.loads(done.stdout)["pins"]}
    assert pins == {"google-bert/bert-base-uncased"}


def test_diff_accepts_a_branch_name(person: Run, hub_emulator: HubEmulator) -> None:
    repo = "openai-community/gpt2"
    assert person("track", repo, "--backfill").returncode == 0
    oldest = hub_emulator.history(repo)[0].sha
    done = person("diff", repo, oldest[:12], "main", "--json")
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["new"] == hub_emulator.head(repo)
