"""Hostile config.json files: a one-line exit 2 from ``plan``, a recorded finding in the
tracker, and an emulator that keeps serving them.

Each case is a real llama config with one value made hostile (written as raw JSON text,
since several are not values ``json.dumps`` would write). The same bytes go to the
``plan`` command as a subprocess, to a repo of the Hub emulator that the backfill
records (on SQLite and PostgreSQL), and to the real huggingface_hub client.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from huggingface_hub import HfApi, hf_hub_download

from storage import Database, changes_of, plan_at, revisions
from tests.storage.builders import recorded_at
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

EXE = str(Path(sys.executable).with_name("neurarch-trace"))
EMPTY_HUB = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)
START = datetime(2026, 1, 1, tzinfo=UTC)
LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}
DEEP = 100_000


def config_with(key: str, raw: str) -> bytes:
    """LLAMA with ``key`` set to the JSON text ``raw``, written verbatim."""
    document = json.dumps({**LLAMA, key: "\0"})
    return document.replace('"\\u0000"', raw).encode()


# name -> (config.json bytes, the words the one stderr line and the recorded finding contain)
HOSTILE: dict[str, tuple[bytes, str]] = {
    "5000-digit int": (
        config_with("hidden_size", "7" * 5000),
        "hidden_size (a 5,000-digit integer) is not a plausible number",
    ),
    "5000-digit int, unread key": (
        config_with("some_future_field", "-" + "9" * 5000),
        "some_future_field (a 5,000-digit integer) is not a plausible number",
    ),
    "2**64": (
        config_with("hidden_size", str(2**64)),
        "hidden_size (18446744073709551616) is implausibly large",
    ),
    "2**70 layers": (
        config_with("num_hidden_layers", str(2**70)),
        "num_hidden_layers (1180591620717411303424) is implausibly large",
    ),
    "1e400": (config_with("hidden_size", "1e400"), "hidden_size must be an integer, got Infinity"),
    "NaN": (config_with("vocab_size", "NaN"), "vocab_size must be an integer, got NaN"),
    "-Infinity": (
        config_with("num_attention_heads", "-Infinity"),
        "num_attention_heads must be an integer, got -Infinity",
    ),
    "negative size": (
        config_with("intermediate_size", "-1024"),
        "intermediate_size (-1024) must be at least 1",
    ),
    "float layers": (
        config_with("num_hidden_layers", "4.5"),
        "num_hidden_layers must be an integer, got 4.5",
    ),
    "deep arrays": (
        config_with("rope_scaling", "[" * DEEP + "]" * DEEP),
        "nested more than 128 levels deep",
    ),
    "deep objects": (
        config_with("rope_scaling", '{"a":' * DEEP + "1" + "}" * DEEP),
        "nested more than 128 levels deep",
    ),
    "10 MB string": (
        config_with("model_type", json.dumps("x" * 10_000_000)),
        "model_type (a 10,000,000-character string) is not a plausible name",
    ),
    "10**9 layers": (
        config_with("num_hidden_layers", str(10**9)),
        "num_hidden_layers (1000000000) is implausibly large",
    ),
    "rope factor 1e308": (
        config_with("rope_scaling", '{"rope_type": "linear", "factor": 1e308}'),
        "rope_scaling: factor (1e+308) is not a plausible scaling factor",
    ),
    "rope_theta NaN": (
        config_with("rope_theta", "NaN"),
        "rope_theta must be a finite number, got NaN",
    ),
    "vocab 0": (config_with("vocab_size", "0"), "vocab_size (0) must be at least 1"),
}
CASES = pytest.mark.parametrize("case", list(HOSTILE))


@CASES
def test_plan_refuses_a_hostile_config_in_one_line_with_exit_2(tmp_path: Path, case: str) -> None:
    config, words = HOSTILE[case]
    path = tmp_path / "config.json"
    path.write_bytes(config)
    start = time.perf_counter()
    result = subprocess.run(
        [EXE, "plan", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    elapsed = time.perf_counter() - start
    lines = result.stderr.splitlines()
    assert (result.returncode, result.stdout, len(lines)) == (2, "", 1), result.stderr[-2000:]
    assert words in lines[0]
    assert len(lines[0]) < 300
    assert elapsed < 2.0


def _weight_index() -> bytes:
    """An index, so the emulator derives shard headers from the config next to it."""
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    return json.dumps(
        {
            "metadata": {"total_size": 3 * 2**20},
            "weight_map": dict.fromkeys(names, "model.safetensors"),
        }
    ).encode()


@EMPTY_HUB
@CASES
def test_backfill_records_a_hostile_revision_with_a_finding_and_no_estimate(
    hub_emulator: HubEmulator, database: Database, case: str
) -> None:
    config, words = HOSTILE[case]
    repo = "hostile/config"
    good = json.dumps(LLAMA).encode()
    hub_emulator.publish(repo, {"config.json": good}, title="upload", date=START)
    bad = hub_emulator.publish(
        repo,
        {"config.json": config, "model.safetensors.index.json": _weight_index()},
        title="hostile",
        date=START + timedelta(days=1),
    )
    report = backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        repo,
        clock=recorded_at,
    )
    assert report.recorded == report.revisions >= 2
    with database.read_session() as session:
        assert bad in {r.sha for r in revisions(session, repo)}
        findings = [c for c in changes_of(session, repo, bad) if c.path == "config.json"]
        assert plan_at(session, repo, bad) is None
    by_kind = {c.kind: c for c in findings}
    finding = by_kind.get("parse_error") or by_kind["estimate_failed"]
    assert words in finding.message
    again = backfill(
        database,
        Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=0),
        repo,
        clock=recorded_at,
    )
    assert again.recorded == 0  # recorded once, never retried


@EMPTY_HUB
@CASES
def test_the_emulator_serves_a_hostile_config_to_the_real_client(
    hub_emulator: HubEmulator, tmp_path: Path, case: str
) -> None:
    config, _ = HOSTILE[case]
    repo = "hostile/served"
    index = _weight_index()
    sha = hub_emulator.publish(
        repo, {"config.json": config, "model.safetensors.index.json": index}, date=START
    )
    api = HfApi(endpoint=hub_emulator.endpoint, token=False)
    info = api.model_info(repo, files_metadata=True)
    assert info.sha == sha
    assert {s.rfilename for s in info.siblings or []} >= {"config.json", "model.safetensors"}
    path = hf_hub_download(
        repo, "config.json", endpoint=hub_emulator.endpoint, token=False, cache_dir=tmp_path
    )
    assert Path(path).read_bytes() == config
    metadata = api.get_safetensors_metadata(repo)
    (header,) = metadata.files_metadata.values()
    assert set(header.tensors) == {
        "model.embed_tokens.weight",
        "model.norm.weight",
        "lm_head.weight",
    }
