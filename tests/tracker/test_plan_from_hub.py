"""`plan ORG/NAME[@REV]`: the real huggingface_hub client against the Hub emulator.

Promises: at most six requests for a plan and never a weight body nor a
config larger than the tracker reads; the same
plan as the same files read from disk; the HF cache and the local database
spare every request; gated, missing and non-model sources exit 2 in one line.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import huggingface_hub.constants
import pytest
import requests

from tracker.cli import main
from tracker.hubsim import HubEmulator
from tracker.hubsim.stats import RequestRecord
from tracker.untrusted.artifacts import TEXT_LIMIT

REPOS = (
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Meta-Llama-3-8B",
    "mistralai/Mistral-7B-v0.1",
    "openai-community/gpt2",
    "bigscience/bloom-560m",
    "facebook/opt-1.3b",
    "EleutherAI/gpt-j-6b",
    "google-bert/bert-base-uncased",
    "tiiuae/falcon-7b",
    "Qwen/Qwen-7B",
)
LIBRARY_TELEMETRY = "/api/agent-harnesses"
"""huggingface_hub 2.x fetches its agent registry once a day; not a request of ours."""


@pytest.fixture
def cli_env(
    hub_emulator: HubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> HubEmulator:
    monkeypatch.setenv("HF_ENDPOINT", hub_emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_DATABASE_URL", raising=False)
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    return hub_emulator


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["plan", *argv, "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def repo_requests(emulator: HubEmulator) -> list[RequestRecord]:
    return [r for r in emulator.stats.records() if r.path != LIBRARY_TELEMETRY]


def write_files_as_on_disk(endpoint: str, repo_id: str, sha: str, into: Path) -> None:
    """The files a plan reads, fetched by plain HTTP and laid out as `plan DIR` reads them."""
    into.mkdir()
    base = f"{endpoint}/{repo_id}/resolve/{sha}"
    (into / "config.json").write_bytes(requests.get(f"{base}/config.json", timeout=10).content)
    index = requests.get(f"{base}/model.safetensors.index.json", timeout=10)
    if index.status_code == 200:
        (into / "model.safetensors.index.json").write_bytes(index.content)
        return
    prefix = requests.get(f"{base}/model.safetensors", headers={"Range": "bytes=0-7"}, timeout=10)
    if prefix.status_code != 206:
        return
    (length,) = struct.unpack("<Q", prefix.content)
    header = requests.get(
        f"{base}/model.safetensors", headers={"Range": f"bytes=8-{7 + length}"}, timeout=10
    )
    (into / "model.safetensors").write_bytes(prefix.content + header.content)


@pytest.mark.parametrize("repo_id", REPOS)
def test_plan_from_hub_costs_at_most_six_requests_and_equals_plan_from_disk(
    repo_id: str, cli_env: HubEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_env.stats.reset()
    from_hub = plan_json(capsys, repo_id)
    made = repo_requests(cli_env)
    assert len(made) <= 6, [(r.method, r.path, r.status) for r in made]
    weight_bodies = [
        r for r in made if r.path.endswith(".safetensors") and r.method == "GET" and not r.range
    ]
    assert weight_bodies == []
    assert sum(r.bytes_sent for r in made) < 200_000

    source = from_hub.pop("source")
    assert source["repo_id"] == repo_id
    assert source["requested"] == "main"
    assert source["read_from"] == "hub"
    assert source["revision"] == cli_env.head(repo_id)

    on_disk = tmp_path / "on-disk"
    write_files_as_on_disk(cli_env.endpoint, repo_id, source["revision"], on_disk)
    assert plan_json(capsys, str(on_disk)) == from_hub


def test_a_revision_in_the_hf_cache_is_planned_without_a_request(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "mistralai/Mistral-7B-v0.1"
    sha = plan_json(capsys, repo_id)["source"]["revision"]
    cli_env.stats.reset()
    again = plan_json(capsys, f"{repo_id}@{sha}")
    assert repo_requests(cli_env) == []
    assert again["source"] == {
        "repo_id": repo_id,
        "requested": sha,
        "revision": sha,
        "read_from": "hub",
    }


def test_an_old_revision_is_planned_at_that_revision(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "mistralai/Mistral-7B-v0.1"
    history = cli_env.history(repo_id)
    oldest = [c.sha for c in history if "config.json" in cli_env.tree(repo_id, c.sha)][-1]
    assert oldest != cli_env.head(repo_id)
    planned = plan_json(capsys, f"https://huggingface.co/{repo_id}/tree/{oldest}")
    assert planned["source"]["revision"] == oldest
    assert planned["source"]["requested"] == oldest


def test_the_invalid_config_llama_2_chat_once_published_is_named_with_its_position(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "meta-llama/Llama-2-7b-chat-hf"
    history = cli_env.history(repo_id)
    oldest = [c.sha for c in history if "config.json" in cli_env.tree(repo_id, c.sha)][-1]
    assert main(["plan", f"{repo_id}@{oldest}"]) == 2
    assert (
        "config.json: not valid JSON (invalid JSON at line 18 column 3" in capsys.readouterr().err
    )


def test_a_config_larger_than_the_tracker_reads_is_refused_before_its_body_is_sent(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "hostile/huge-config"
    padding = b" " * (TEXT_LIMIT + 1)
    cli_env.publish(repo_id, {"config.json": b'{"model_type": "llama"' + padding + b"}"})
    cli_env.stats.reset()
    assert main(["plan", repo_id]) == 2
    err = capsys.readouterr().err
    assert f"{TEXT_LIMIT + 24:,} bytes, larger than the tracker reads" in err
    made = repo_requests(cli_env)
    assert [r.method for r in made] == ["HEAD"]
    assert sum(r.bytes_sent for r in made) < 10_000


def test_a_revision_the_database_recorded_costs_no_request(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = "openai-community/gpt2"
    assert main(["track", repo_id, "--backfill"]) == 0
    head = cli_env.head(repo_id)
    cli_env.stats.reset()
    planned = plan_json(capsys, f"{repo_id}@{head}")
    assert repo_requests(cli_env) == []
    assert planned["source"]["read_from"] == "database"
    assert planned["parameters"]["total"] == plan_json(capsys, repo_id)["parameters"]["total"]


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("nobody/no-such-model", "repo not found"),
        ("openai-community/gpt2@no-such-branch", "revision not found"),
        ("hf://datasets/nobody/data", "a dataset, not a model repo"),
        ("not a path or a repo", "no such file, and not a Hub repo"),
    ],
)
def test_sources_that_are_not_plannable_exit_2_in_one_line(
    source: str, says: str, cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", source]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1


def test_a_gated_repo_says_how_to_get_access(
    cli_env: HubEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_env.set_gated("meta-llama/Llama-2-7b-hf", "manual")
    assert main(["plan", "meta-llama/Llama-2-7b-hf"]) == 2
    err = capsys.readouterr().err
    assert "gated" in err and "HF_TOKEN" in err
    assert err.count("\n") == 1


def test_a_gated_repo_is_planned_with_an_approved_hf_token(
    cli_env: HubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_env.set_gated("meta-llama/Llama-2-7b-hf", "manual", approved=["hf_approved"])
    monkeypatch.setenv("HF_TOKEN", "hf_someone_else")
    assert main(["plan", "meta-llama/Llama-2-7b-hf"]) == 2
    assert "gated" in capsys.readouterr().err
    monkeypatch.setenv("HF_TOKEN", "hf_approved")
    planned = plan_json(capsys, "meta-llama/Llama-2-7b-hf")
    assert planned["source"]["revision"] == cli_env.head("meta-llama/Llama-2-7b-hf")
