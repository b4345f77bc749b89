"""@huggingface/hub (the Hub's JavaScript client, pinned in js/package-lock.json) against the emulator.

``js/contract.mjs`` calls modelInfo, countCommits, listCommits, listFiles, fileExists,
downloadFile, fileDownloadInfo, pathsInfo and parseSafetensorsMetadata on one repo and
prints what each returned; every row here checks one call on every contract repo
against the corpus. CI installs Node and the package (.ci/run, ``npm ci``) and sets
NEURARCH_REQUIRE_NODE=1, which turns a missing Node into a failure instead of a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.contract.conftest import GATED, REPOS, TOKEN
from tests.contract.corpus_truth import RepoTruth, parameter_bytes
from tracker.hubsim import HubEmulator, git_blob_id

Results = dict[str, dict[str, Any]]
JS_DIR = Path(__file__).resolve().parent / "js"
SCRIPT = JS_DIR / "contract.mjs"


def _node() -> str:
    node = shutil.which("node")
    installed = (JS_DIR / "node_modules" / "@huggingface" / "hub" / "package.json").is_file()
    if node and installed:
        return node
    reason = "node is not installed" if not node else "run `npm ci` in tests/contract/js first"
    if os.environ.get("NEURARCH_REQUIRE_NODE") == "1":
        pytest.fail(f"the JavaScript contract cannot run: {reason}")
    pytest.skip(f"the JavaScript contract cannot run: {reason}")


@pytest.fixture(scope="module")
def js_results(contract_hub: HubEmulator) -> Results:
    node = _node()
    results = {}
    for repo in REPOS:
        done = subprocess.run(
            [node, str(SCRIPT), contract_hub.endpoint, repo, TOKEN],
            cwd=JS_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        results[repo] = json.loads(done.stdout)
    return results


def value(results: Results, repo: str, call: str) -> Any:
    answer = results[repo][call]
    assert "error" not in answer, f"{call} on {repo}: {answer['error']}"
    return answer["value"]


@pytest.mark.parametrize("repo", REPOS)
def test_model_info(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    info = value(js_results, repo, "modelInfo")
    assert (info["name"], info["sha"]) == (repo, truths[repo].head)
    assert set(info["filePaths"]) == truths[repo].listed_files()
    assert info["gated"] == ("manual" if repo == GATED else False)


@pytest.mark.parametrize("repo", REPOS)
def test_count_commits(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    assert value(js_results, repo, "countCommits") == truths[repo].commit_count


@pytest.mark.parametrize("repo", REPOS)
def test_list_commits(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    commits = value(js_results, repo, "listCommits")  # pages of 5, through Link
    assert [c["oid"] for c in commits[:-1]] == truths[repo].main
    assert commits[-1]["title"] == "initial commit"


@pytest.mark.parametrize("repo", REPOS)
def test_list_files(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    files = {f["path"]: f for f in value(js_results, repo, "listFiles") if f["type"] == "file"}
    assert set(files) == truths[repo].listed_files()
    for path, content in truths[repo].files.items():
        assert files[path]["size"] == len(content)
    config = truths[repo].files["config.json"]
    assert files["config.json"]["oid"] == git_blob_id(config)
    assert all(files[s]["lfs"] for s in truths[repo].index()["weight_map"].values())


@pytest.mark.parametrize("repo", REPOS)
def test_file_exists(js_results: Results, repo: str) -> None:
    assert value(js_results, repo, "fileExists") == {"config": True, "missing": False}


@pytest.mark.parametrize("repo", REPOS)
def test_download_file(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    text = value(js_results, repo, "downloadFile")
    assert text.encode() == truths[repo].files["config.json"]


@pytest.mark.parametrize("repo", REPOS)
def test_file_download_info(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    info = value(js_results, repo, "fileDownloadInfo")
    config = truths[repo].files["config.json"]
    assert info["config"] == {"size": len(config), "etag": f'"{git_blob_id(config)}"'}
    index = truths[repo].files["model.safetensors.index.json"]
    assert info["index"]["size"] == len(index)
    assert info["missing"] is None


@pytest.mark.parametrize("repo", REPOS)
def test_paths_info(js_results: Results, truths: dict[str, RepoTruth], repo: str) -> None:
    rows = value(js_results, repo, "pathsInfo")  # a JSON body, expand: true
    config, index = (truths[repo].files[p] for p in ("config.json", "model.safetensors.index.json"))
    assert [(r["path"], r["oid"], r["size"]) for r in rows] == [
        ("config.json", git_blob_id(config), len(config)),
        ("model.safetensors.index.json", git_blob_id(index), len(index)),
    ]
    assert all(r["lastCommit"] in truths[repo].main for r in rows)


@pytest.mark.parametrize("repo", REPOS)
def test_parse_safetensors_metadata(
    js_results: Results, truths: dict[str, RepoTruth], repo: str
) -> None:
    meta = value(js_results, repo, "parseSafetensorsMetadata")
    index = truths[repo].index()
    assert meta["sharded"] is True
    assert meta["tensors"] == len(index["weight_map"])
    assert set(meta["files"]) == {"model.safetensors.index.json", *index["weight_map"].values()}
    assert parameter_bytes(meta["parameterCount"]) == index["metadata"]["total_size"]


def test_gated_repo_refuses_the_anonymous_client(contract_hub: HubEmulator) -> None:
    done = subprocess.run(
        [_node(), str(SCRIPT), contract_hub.endpoint, GATED],
        cwd=JS_DIR, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    results = json.loads(done.stdout)
    assert results["modelInfo"]["value"]["gated"] == "manual"  # metadata stays public
    assert (
        "Access to model meta-llama/Llama-2-7b-hf is restricted" in results["downloadFile"]["error"]
    )
    assert "error" in results["fileExists"]
