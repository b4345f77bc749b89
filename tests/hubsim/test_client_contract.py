"""The real huggingface_hub client parses every endpoint the emulator serves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from huggingface_hub import (
    HfApi,
    RepoFile,
    RepoFolder,
    get_hf_file_metadata,
    hf_hub_download,
    hf_hub_url,
)

from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator, git_blob_id

MISTRAL = "mistralai/Mistral-7B-v0.1"


def corpus_file(corpus_dir: Path, repo: str, revision: str, path: str) -> bytes:
    return (corpus_dir / repo / revision / path).read_bytes()


def api(emulator: HubEmulator) -> HfApi:
    return HfApi(endpoint=emulator.endpoint, token=False)


def test_model_info_lists_siblings_with_blob_ids_and_lfs(
    hub_emulator: HubEmulator, corpus_dir: Path
) -> None:
    info = api(hub_emulator).model_info(MISTRAL, files_metadata=True)
    assert (
        info.sha == "26bca36bde8333b5d7f72e9ed20ccda6a618af24"
    )  # the upstream head in MANIFEST.json
    siblings = {s.rfilename: s for s in info.siblings or []}
    config = corpus_file(
        corpus_dir, MISTRAL, "e836d8f71b5812f9fee65618453dc537c66bd82a", "config.json"
    )
    assert siblings["config.json"].blob_id == git_blob_id(config)
    assert siblings["config.json"].size == len(config)
    assert siblings["config.json"].lfs is None
    index = json.loads(
        corpus_file(
            corpus_dir,
            MISTRAL,
            "26bca36bde8333b5d7f72e9ed20ccda6a618af24",
            "model.safetensors.index.json",
        )
    )
    for shard in set(index["weight_map"].values()):
        assert siblings[shard].lfs is not None
        assert siblings[shard].lfs.size == siblings[shard].size
    shard_bytes = sum(s.size or 0 for n, s in siblings.items() if n.endswith(".safetensors"))
    assert shard_bytes > index["metadata"]["total_size"]  # the data plus each shard's header


def test_model_info_at_a_revision_reports_that_commit(hub_emulator: HubEmulator) -> None:
    info = api(hub_emulator).model_info(MISTRAL, revision="c2a147dc")
    assert info.sha.startswith("c2a147dc") and len(info.sha) == 40
    assert "model.safetensors.index.json" not in {s.rfilename for s in info.siblings or []}


def test_commits_page_through_link_headers_newest_first(corpus_dir: Path) -> None:
    emulator = HubEmulator(corpus_dir, page_size=2)
    emulator.start()
    try:
        commits = api(emulator).list_repo_commits(MISTRAL, formatted=True)
        pages = emulator.stats.requests("commits")
    finally:
        emulator.stop()
    manifest = json.loads((corpus_dir / "MANIFEST.json").read_text())
    main = {
        e["revision"]: e["date"]
        for e in manifest
        if e["repo_id"] == MISTRAL and e["notes"].endswith("(main)")
    }
    main |= {
        e["revision"]: e["date"]
        for e in manifest
        if e["repo_id"] == MISTRAL and "(main);" in e["notes"]
    }
    events = json.loads((corpus_dir / "EVENTS.json").read_text())
    deletions = {
        e["file"]: e for e in events if e["repo_id"] == MISTRAL and e["notes"].startswith("DELETED")
    }
    main |= {
        e["revision"]: e["date"] for e in deletions.values()
    }  # the last deletion of a path is main's
    expected = sorted(main, key=lambda sha: main[sha], reverse=True)
    assert [c.commit_id for c in commits[:-1]] == expected
    assert commits[-1].title == "initial commit"
    assert pages == (len(commits) + 1) // 2
    assert commits[0].formatted_title == commits[0].title


def test_refs_list_main_and_pull_requests(hub_emulator: HubEmulator) -> None:
    refs = api(hub_emulator).list_repo_refs(MISTRAL, include_pull_requests=True)
    assert [(b.name, b.target_commit) for b in refs.branches] == [
        ("main", "26bca36bde8333b5d7f72e9ed20ccda6a618af24")
    ]
    assert refs.converts == [] and refs.tags == []
    prs = {r.ref: r.target_commit for r in refs.pull_requests or []}
    assert prs["refs/pr/9"] == "2f6862dce962d6930711756deb79098863431d05"
    main = {c.commit_id for c in api(hub_emulator).list_repo_commits(MISTRAL)}
    assert not main & set(prs.values())


def test_pull_request_revision_is_served_by_its_quoted_ref(
    hub_emulator: HubEmulator, corpus_dir: Path
) -> None:
    client = api(hub_emulator)
    info = client.model_info(MISTRAL, revision="refs/pr/35")
    assert info.sha == "b3a891b8fe29cd56cf610139d4ed2ff539940f0c"
    path = hf_hub_download(MISTRAL, "config.json", revision="refs/pr/35", endpoint=hub_emulator.endpoint,
                           cache_dir=None, local_dir=None, token=False)  # fmt: skip
    assert Path(path).read_bytes() == corpus_file(corpus_dir, MISTRAL, info.sha, "config.json")


def test_tree_recursive_and_expanded(hub_emulator: HubEmulator) -> None:
    client = api(hub_emulator)
    repo = "openai/gpt-oss-20b"
    top = list(client.list_repo_tree(repo, revision="f81fef1ddd90d214968e951a76834f1ded130a18"))
    assert any(isinstance(e, RepoFolder) and e.path == "original" for e in top)
    deep = list(
        client.list_repo_tree(
            repo, revision="f81fef1ddd90d214968e951a76834f1ded130a18", recursive=True, expand=True
        )
    )
    files = {e.path: e for e in deep if isinstance(e, RepoFile)}
    assert files["original/config.json"].last_commit is not None
    assert (
        files["original/config.json"].last_commit.oid == "f81fef1ddd90d214968e951a76834f1ded130a18"
    )
    head = {e.path for e in client.list_repo_tree(repo, recursive=True)}
    assert "original/config.json" not in head and "chat_template.json" not in head
    shard = next(e for e in files.values() if e.path.endswith(".safetensors"))
    assert shard.lfs is not None and shard.lfs.sha256 != shard.blob_id


def test_paths_info_and_file_metadata_agree(hub_emulator: HubEmulator, corpus_dir: Path) -> None:
    client = api(hub_emulator)
    (info,) = client.get_paths_info(MISTRAL, ["config.json"], expand=True)
    assert isinstance(info, RepoFile)
    meta = get_hf_file_metadata(
        hf_hub_url(MISTRAL, "config.json", endpoint=hub_emulator.endpoint), token=False
    )
    assert meta.etag == info.blob_id
    assert meta.commit_hash == "26bca36bde8333b5d7f72e9ed20ccda6a618af24"
    assert meta.size == info.size
    assert client.file_exists(MISTRAL, "config.json")
    assert not client.file_exists(MISTRAL, "added_tokens.json")  # deleted upstream in (#44)


def test_download_returns_the_corpus_bytes(
    hub_emulator: HubEmulator, corpus_dir: Path, tmp_path: Path
) -> None:
    path = hf_hub_download(
        MISTRAL, "config.json", endpoint=hub_emulator.endpoint, cache_dir=tmp_path, token=False
    )
    assert Path(path).read_bytes() == corpus_file(
        corpus_dir, MISTRAL, "e836d8f71b5812f9fee65618453dc537c66bd82a", "config.json"
    )


def test_safetensors_metadata_reads_headers_without_weight_bodies(
    hub_emulator: HubEmulator, corpus_dir: Path
) -> None:
    hub_emulator.stats.reset()
    meta = api(hub_emulator).get_safetensors_metadata(MISTRAL)
    index = json.loads(
        corpus_file(
            corpus_dir,
            MISTRAL,
            "26bca36bde8333b5d7f72e9ed20ccda6a618af24",
            "model.safetensors.index.json",
        )
    )
    assert set(meta.weight_map) == set(index["weight_map"])
    tensors = {n for f in meta.files_metadata.values() for n in f.tensors}
    assert tensors == set(index["weight_map"])
    assert meta.files_metadata["model-00001-of-00002.safetensors"].tensors[
        "model.embed_tokens.weight"
    ].shape == [32000, 4096]
    resolve = hub_emulator.stats.records("resolve")
    shard_reads = [
        r for r in resolve if r.path.endswith("-of-00002.safetensors") and r.method == "GET"
    ]
    assert shard_reads and all(r.range is not None and r.status == 206 for r in shard_reads)
    assert all(r.bytes_sent <= 100_001 for r in shard_reads)
    assert hub_emulator.stats.bytes_sent("resolve") < 300_000


def test_list_models_sorts_by_last_modified_across_pages(corpus_dir: Path) -> None:
    emulator = HubEmulator(corpus_dir, page_size=4)
    emulator.start()
    try:
        models = list(api(emulator).list_models(sort="last_modified", full=True, limit=10))
        pages = emulator.stats.requests("list_models")
        expected = sorted(
            emulator.repo_ids(), key=lambda r: emulator.history(r)[0].date, reverse=True
        )[:10]
    finally:
        emulator.stop()
    assert [m.id for m in models] == expected
    assert all(m.sha and m.last_modified for m in models)
    assert [m.last_modified for m in models] == sorted(
        (m.last_modified for m in models), reverse=True
    )  # type: ignore[type-var]
    assert pages == 3


def test_list_models_filters_by_author(hub_emulator: HubEmulator) -> None:
    ids = [
        m.id
        for m in api(hub_emulator).list_models(author="mistralai", expand=["sha", "lastModified"])
    ]
    assert ids and all(i.startswith("mistralai/") for i in ids)


@pytest.mark.parametrize("hub_emulator", [{"page_size": 3}], indirect=True)
def test_fixture_takes_a_page_size(hub_emulator: HubEmulator) -> None:
    api(hub_emulator).list_repo_commits(MISTRAL)
    assert hub_emulator.stats.requests("commits") == 4


@pytest.mark.parametrize("hub_emulator", [{"page_size": 2}], indirect=True)
def test_tree_pages_through_link_headers(hub_emulator: HubEmulator) -> None:
    files = [e.path for e in api(hub_emulator).list_repo_tree(MISTRAL, recursive=True)]
    assert files == sorted(hub_emulator.tree(MISTRAL))
    assert hub_emulator.stats.requests("tree") == (len(files) + 1) // 2


@pytest.mark.parametrize("hub_emulator", [{"corpus": HISTORIES}], indirect=True)
def test_fixture_serves_another_corpus_directory(hub_emulator: HubEmulator) -> None:
    assert {m.id for m in api(hub_emulator).list_models()} == {
        "neurarch-demo/llama2-7b",
        "neurarch-demo/llama3-8b-instruct",
        "neurarch-demo/mistral-7b-instruct",
        "neurarch-demo/phi-1_5",
    }
