"""Every call the product itself makes to the Hub, through the product's own code, on the emulator.

The calls, listed from tracker/ (``grep -rn "HfApi\\|hf_hub_download\\|get_session\\|scan_cache_dir"
tracker --include=*.py``, the emulator itself aside), and the test covering each:

========================================  ==============================================  ==========================================
where (tracker/)                          call                                            test
========================================  ==============================================  ==========================================
discovery.py ``Discovery.walk``            ``HfApi.list_models(sort="last_modified",        test_discovery_walk_sees_every_head
                                          expand=["lastModified", "sha"])``, Link paging
discovery.py ``HeadProbe.head``            ``HfApi.model_info(expand=["sha", "gated",       test_head_probe
                                          "private"])``
hub.py ``Hub.head_sha``                    ``HfApi.model_info(revision=, expand=["sha"])``  test_hub_head_sha_and_commits
hub.py ``Hub.commits``                     ``GET /api/models/{repo}/commits/{rev}`` paged   test_hub_head_sha_and_commits
                                          by ``Link`` (huggingface_hub's session)
hub.py ``Hub.files``                       ``HfApi.model_info(revision=sha,                 test_hub_files_and_reads
                                          files_metadata=True)``
hub.py ``Hub.read_text``                   ``GET /{repo}/resolve/{sha}/{path}``             test_hub_files_and_reads
hub.py ``Hub.safetensors_header``          ranged ``GET /{repo}/resolve/{sha}/{shard}``     test_hub_files_and_reads
hub_source.py ``HubPlanSource.fetch``      ``hf_hub_download(dry_run=True)``,               test_plan_source_sharded,
                                          ``hf_hub_download``, ``try_to_load_from_cache``,  test_plan_source_single_file
                                          ``HfApi.parse_safetensors_file_metadata``
audit/local_sources.py                    ``scan_cache_dir``                               test_plan_source_sharded
``pins_from_hf_cache``
========================================  ==============================================  ==========================================
"""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.contract.conftest import GATED, REPOS, TOKEN
from tests.contract.corpus_truth import RepoTruth
from tracker.audit.local_sources import pins_from_hf_cache
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import Discovery, HeadProbe
from tracker.hub.plan_source import HubPlanSource, HubRef
from tracker.hub.retry import INTERACTIVE, Retrying
from tracker.hubsim import HubEmulator, git_blob_id
from tracker.settings import HubSettings

INDEX = "model.safetensors.index.json"


def test_discovery_walk_sees_every_head(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth]
) -> None:
    known: dict[str, str | None] = {repo: None for repo in REPOS}
    result = Discovery(connect(HubSettings(contract_hub.endpoint, TOKEN))).walk(
        datetime(2000, 1, 1, tzinfo=UTC), known
    )
    assert dict(result.moved) == {repo: truths[repo].head for repo in REPOS}
    assert result.scanned == len(contract_hub.repo_ids())


@pytest.mark.parametrize("repo", REPOS)
def test_head_probe(contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str) -> None:
    head = HeadProbe(connect(HubSettings(contract_hub.endpoint, TOKEN))).head(repo)
    assert (head.repo_id, head.sha, head.gated, head.private) == (
        repo, truths[repo].head, repo == GATED, False,
    )  # fmt: skip


@pytest.mark.parametrize("repo", REPOS)
def test_hub_head_sha_and_commits(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str
) -> None:
    hub = Hub(connect(HubSettings(contract_hub.endpoint, TOKEN)))
    assert hub.head_sha(repo) == truths[repo].head
    revisions = hub.commits(repo)
    assert [r.sha for r in reversed(revisions[1:])] == truths[repo].main
    assert revisions[1].parents == (revisions[0].sha,)


@pytest.mark.parametrize("repo", REPOS)
def test_hub_files_and_reads(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str
) -> None:
    hub = Hub(connect(HubSettings(contract_hub.endpoint, TOKEN)))
    listing = hub.files(repo, truths[repo].head)
    entries = {e.path: e for e in listing.files}
    assert set(entries) == truths[repo].listed_files()
    assert listing.gated == ("manual" if repo == GATED else False)
    config = truths[repo].files["config.json"]
    assert entries["config.json"].blob_id == git_blob_id(config)
    assert hub.read_text(repo, listing.sha, entries["config.json"], 1 << 20) == config
    index = truths[repo].index()
    shard = sorted(set(index["weight_map"].values()))[0]
    header = hub.safetensors_header(repo, listing.sha, entries[shard])
    named = {t for t, s in index["weight_map"].items() if s == shard}
    assert set(header) - {"__metadata__"} == named


@pytest.mark.parametrize("repo", REPOS)
def test_plan_source_sharded(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str, tmp_path: Path
) -> None:
    source = HubPlanSource(
        Hub(connect(HubSettings(contract_hub.endpoint, TOKEN)), retrying=Retrying(INTERACTIVE)),
        cache_dir=tmp_path,
    )
    inputs = source.fetch(HubRef(repo))
    assert inputs.sha == truths[repo].head
    assert inputs.config == json.loads(truths[repo].files["config.json"])
    index = truths[repo].index()
    assert inputs.manifest is not None
    assert set(inputs.manifest.names) == set(index["weight_map"])
    assert inputs.manifest.total_size == index["metadata"]["total_size"]
    contract_hub.stats.reset()
    again = source.fetch(HubRef(repo, truths[repo].head))  # a pinned sha: all from the cache
    assert again.sha == inputs.sha and contract_hub.stats.requests("resolve") == 0
    (pin,) = pins_from_hf_cache(tmp_path)
    assert (pin.repo_id, pin.revision) == (repo, truths[repo].head)


def test_plan_source_single_file(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], tmp_path: Path
) -> None:
    """No corpus repo holds one model.safetensors, so this one is published: a corpus config
    with a two-tensor file, read by ``parse_safetensors_file_metadata``'s range request."""
    header = json.dumps({
        "model.embed_tokens.weight": {"dtype": "BF16", "shape": [4, 2], "data_offsets": [0, 16]},
        "lm_head.weight": {"dtype": "BF16", "shape": [4, 2], "data_offsets": [16, 32]},
    }).encode()  # fmt: skip
    weights = struct.pack("<Q", len(header)) + header + bytes(32)
    config = truths[REPOS[0]].files["config.json"]
    sha = contract_hub.publish(
        "contract/single-file", {"config.json": config, "model.safetensors": weights}
    )
    source = HubPlanSource(
        Hub(connect(HubSettings(contract_hub.endpoint, TOKEN)), retrying=Retrying(INTERACTIVE)),
        cache_dir=tmp_path,
    )
    inputs = source.fetch(HubRef("contract/single-file"))
    assert inputs.sha == sha and inputs.config == json.loads(config)
    assert inputs.manifest is not None
    assert set(inputs.manifest.names) == {"model.embed_tokens.weight", "lm_head.weight"}
    assert inputs.manifest.scalars == 16
