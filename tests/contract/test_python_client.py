"""huggingface_hub's surface users call, against the emulator, checked against the corpus.

One row per call, each on the five contract repos (conftest.REPOS), with the token the
gated repo approved; the gated repo's refusals have their own test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import (
    HfApi,
    HfFileSystem,
    RepoFile,
    hf_hub_download,
    hf_hub_url,
    scan_cache_dir,
    snapshot_download,
)
from huggingface_hub.errors import GatedRepoError
from huggingface_hub.utils import get_session  # type: ignore[attr-defined]  # lazily exported

from tests.contract.conftest import BRANCH, BRANCHED, GATED, REPOS, TAG, TOKEN
from tests.contract.corpus_truth import RepoTruth, parameter_bytes
from tracker.hubsim import HubEmulator, git_blob_id

INDEX = "model.safetensors.index.json"


def api(hub: HubEmulator, token: str | bool = TOKEN) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=token)


@pytest.mark.parametrize("repo", REPOS)
def test_model_info_with_expand(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str
) -> None:
    info = api(contract_hub).model_info(
        repo, expand=["sha", "gated", "siblings", "safetensors", "lastModified"]
    )
    truth = truths[repo]
    assert info.sha == truth.head
    assert info.gated == ("manual" if repo == GATED else False)
    assert {s.rfilename for s in info.siblings or []} == truth.listed_files()
    assert info.safetensors is not None
    assert parameter_bytes(info.safetensors.parameters) == truth.index()["metadata"]["total_size"]
    assert info.downloads is None  # not asked for, not sent
    at_head = api(contract_hub).model_info(repo, revision=truth.head[:10], expand=["sha"])
    assert at_head.sha == truth.head


@pytest.mark.parametrize("repo", REPOS)
def test_list_repo_commits(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str
) -> None:
    commits = api(contract_hub).list_repo_commits(repo, formatted=True)
    assert [c.commit_id for c in commits[:-1]] == truths[repo].main
    assert len(commits) == truths[repo].commit_count
    assert commits[-1].title == "initial commit"


@pytest.mark.parametrize("repo", REPOS)
def test_list_repo_refs(contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str) -> None:
    refs = api(contract_hub).list_repo_refs(repo, include_pull_requests=True)
    branches = {b.name: b.target_commit for b in refs.branches}
    assert branches["main"] == truths[repo].head
    prs = {int(p.ref.removeprefix("refs/pr/")) for p in refs.pull_requests or []}
    assert truths[repo].pull_requests <= prs
    if repo == BRANCHED:
        assert branches[BRANCH] == truths[repo].main[1]
        assert {t.name: t.target_commit for t in refs.tags} == {TAG: truths[repo].head}
        dev = api(contract_hub).model_info(repo, revision=BRANCH, expand=["sha"])
        tagged = api(contract_hub).model_info(repo, revision=f"refs/tags/{TAG}", expand=["sha"])
        assert (dev.sha, tagged.sha) == (truths[repo].main[1], truths[repo].head)
    else:
        assert list(branches) == ["main"] and refs.tags == []


@pytest.mark.parametrize("repo", REPOS)
def test_list_repo_tree(contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str) -> None:
    entries = list(api(contract_hub).list_repo_tree(repo, recursive=True))
    files = {e.path: e for e in entries if isinstance(e, RepoFile)}
    assert set(files) == truths[repo].listed_files()
    for path, content in truths[repo].files.items():
        assert (files[path].size, files[path].blob_id) == (len(content), git_blob_id(content))


@pytest.mark.parametrize("repo", REPOS)
def test_get_paths_info(contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str) -> None:
    infos = api(contract_hub).get_paths_info(repo, ["config.json", INDEX], expand=True)
    files = truths[repo].files
    assert all(isinstance(i, RepoFile) for i in infos)
    assert [(i.path, i.blob_id) for i in infos if isinstance(i, RepoFile)] == [
        ("config.json", git_blob_id(files["config.json"])),
        (INDEX, git_blob_id(files[INDEX])),
    ]
    assert all(isinstance(i, RepoFile) and i.last_commit for i in infos)
    assert {i.last_commit.oid for i in infos if isinstance(i, RepoFile) and i.last_commit} <= set(
        truths[repo].main
    )


@pytest.mark.parametrize("repo", REPOS)
def test_file_exists(contract_hub: HubEmulator, repo: str) -> None:
    client = api(contract_hub)
    assert client.file_exists(repo, "config.json")
    assert not client.file_exists(repo, "no-such-file.json")


@pytest.mark.parametrize("repo", REPOS)
def test_hf_hub_download_twice(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str, tmp_path: Path
) -> None:
    def download() -> Path:
        return Path(
            hf_hub_download(
                repo, "config.json", endpoint=contract_hub.endpoint, cache_dir=tmp_path, token=TOKEN
            )
        )

    first = download()
    contract_hub.stats.reset()
    second = download()
    assert first == second and second.read_bytes() == truths[repo].files["config.json"]
    assert second.parent.name == truths[repo].head
    # The second call asks only whether the file changed: one HEAD, no body.
    assert [(r.method, r.status) for r in contract_hub.stats.records("resolve")] == [("HEAD", 200)]
    url = hf_hub_url(repo, "config.json", endpoint=contract_hub.endpoint)
    etag = f'"{git_blob_id(truths[repo].files["config.json"])}"'
    headers = {"Authorization": f"Bearer {TOKEN}", "If-None-Match": etag}
    unchanged = get_session().get(url, headers=headers)
    assert (unchanged.status_code, unchanged.content) == (304, b"")
    changed = get_session().get(url, headers={**headers, "If-None-Match": '"other"'})
    assert changed.status_code == 200


@pytest.mark.parametrize("repo", REPOS)
def test_snapshot_download(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str, tmp_path: Path
) -> None:
    folder = Path(
        snapshot_download(
            repo,
            allow_patterns=["*.json"],
            endpoint=contract_hub.endpoint,
            cache_dir=tmp_path,
            token=TOKEN,
        )
    )
    assert folder.name == truths[repo].head
    expected = {p: c for p, c in truths[repo].files.items() if p.endswith(".json")}
    got = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert got == expected
    cache = scan_cache_dir(tmp_path)
    (cached,) = cache.repos
    assert (cached.repo_id, cached.repo_type) == (repo, "model")
    (revision,) = cached.revisions
    assert revision.commit_hash == truths[repo].head
    assert {f.file_name for f in revision.files} == {p.rsplit("/", 1)[-1] for p in expected}
    assert revision.size_on_disk == sum(len(c) for c in expected.values())


@pytest.mark.parametrize("repo", REPOS)
def test_get_safetensors_metadata(
    contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str
) -> None:
    meta = api(contract_hub).get_safetensors_metadata(repo)
    index = truths[repo].index()
    assert meta.sharded and set(meta.weight_map) == set(index["weight_map"])
    tensors = {n for f in meta.files_metadata.values() for n in f.tensors}
    assert tensors == set(index["weight_map"])
    counts = {str(dtype): n for dtype, n in meta.parameter_count.items()}
    assert parameter_bytes(counts) == index["metadata"]["total_size"]


@pytest.mark.parametrize("repo", REPOS)
def test_hf_file_system(contract_hub: HubEmulator, truths: dict[str, RepoTruth], repo: str) -> None:
    fs = HfFileSystem(endpoint=contract_hub.endpoint, token=TOKEN, skip_instance_cache=True)
    listed = set(truths[repo].listed_files())
    top = {str(name).removeprefix(repo + "/") for name in fs.ls(repo, detail=False)}
    assert top == {p.split("/", 1)[0] for p in listed}
    with fs.open(f"{repo}/config.json", "rb") as handle:
        assert handle.read() == truths[repo].files["config.json"]
    globbed = {p.removeprefix(repo + "/") for p in fs.glob(f"{repo}/*.json")}
    assert globbed == {p for p in listed if "/" not in p and p.endswith(".json")}


def test_gated_repo_answers_anonymous_callers_as_the_hub_does(
    contract_hub: HubEmulator, tmp_path: Path
) -> None:
    anonymous = api(contract_hub, token=False)
    assert anonymous.model_info(GATED).gated == "manual"  # metadata stays readable
    with pytest.raises(GatedRepoError) as refused:
        hf_hub_download(GATED, "config.json", endpoint=contract_hub.endpoint,
                        cache_dir=tmp_path, token=False)  # fmt: skip
    response = refused.value.response
    assert response is not None and response.status_code == 401
    assert response.headers["X-Error-Code"] == "GatedRepo"
    with pytest.raises(GatedRepoError) as other:
        api(contract_hub, token="hf_notapproved").file_exists(GATED, "config.json")
    assert other.value.response is not None and other.value.response.status_code == 403
