"""The JSON bodies the Hub answers with, as huggingface_hub 2.4 and @huggingface/hub 2.x parse them."""

from __future__ import annotations

import functools
import hashlib
import html
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import yaml

from tracker.hubsim.blobs import Blob
from tracker.hubsim.history import Commit, Repo

MODEL_INFO_FIELDS = (
    "author", "sha", "lastModified", "createdAt", "private", "gated", "disabled",
    "downloads", "likes", "library_name", "tags", "pipeline_tag", "cardData", "config",
    "siblings", "spaces", "safetensors", "usedStorage",
)  # fmt: skip
EXPANDABLE = frozenset(MODEL_INFO_FIELDS) | {
    "baseModels", "childrenModelCount", "downloadsAllTime", "evalResults", "gguf", "gitalyUid",
    "inference", "inferenceProviderMapping", "mask_token", "model-index", "resourceGroup",
    "transformersInfo", "trendingScore", "widgetData", "xetEnabled",
}  # fmt: skip
"""Every ``expand`` key either client sends for a model (huggingface_hub's
ExpandModelProperty_T, @huggingface/hub's MODEL_EXPANDABLE_KEYS). The Hub answers an
unknown key with 400; a known key with no value for this repo is left out of the body."""


def iso(date: datetime) -> str:
    """The Hub's timestamp format: UTC with milliseconds and a Z."""
    return date.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{date.microsecond // 1000:03d}Z"


def object_id(text: str) -> str:
    """A stable 24-hex id like the Hub's Mongo ``_id``."""
    return hashlib.sha1(text.encode()).hexdigest()[:24]


def card_data(tree: Mapping[str, Blob]) -> dict[str, Any] | None:
    """README.md front matter, the Hub's ``cardData``; None without one."""
    readme = tree.get("README.md")
    text = readme.text() if readme else None
    if not text or not text.startswith(b"---"):
        return None
    parts = text.split(b"---", 2)
    try:
        data = yaml.safe_load(parts[1]) if len(parts) == 3 else None
    except (yaml.YAMLError, RecursionError):  # front matter nested thousands deep
        return None
    return data if isinstance(data, dict) else None


def _config_summary(tree: Mapping[str, Blob]) -> dict[str, Any] | None:
    blob = tree.get("config.json")
    try:
        config = json.loads(blob.text() or b"") if blob else None
    except (ValueError, RecursionError):  # any upstream bytes: too deep, a 5,000-digit int
        return None
    if not isinstance(config, dict):
        return None
    return {k: config[k] for k in ("architectures", "model_type") if k in config}


def sibling(path: str, blob: Blob, blobs: bool) -> dict[str, Any]:
    """One ``siblings`` item of model info; sizes, blob ids and LFS facts only with ``blobs``."""
    item: dict[str, Any] = {"rfilename": path}
    if blobs:
        item.update(size=blob.size, blobId=blob.oid)
        if blob.lfs:
            item["lfs"] = {
                "sha256": blob.lfs.sha256,
                "size": blob.lfs.size,
                "pointerSize": blob.lfs.pointer_size,
            }
    return item


def model_info(
    repo: Repo,
    commit: Commit,
    tree: Callable[[], Mapping[str, Blob]],
    *,
    blobs: bool,
    expand: list[str],
    safetensors: Callable[[], dict[str, Any] | None] = lambda: None,
) -> dict[str, Any]:
    """The model_info body; ``tree`` is read only for the fields that need it.

    A listing page asks for ``expand=lastModified,sha`` over a thousand repos: those
    answers must not build a thousand trees.
    """
    files = functools.cache(tree)
    card = functools.cache(lambda: card_data(files()))
    config = functools.cache(lambda: _config_summary(files()))
    full: dict[str, Callable[[], Any]] = {
        "author": lambda: repo.author,
        "sha": lambda: commit.sha,
        "lastModified": lambda: iso(commit.date),
        "createdAt": lambda: iso(repo.created_at),
        "private": lambda: repo.private,
        "gated": lambda: repo.gated,
        "disabled": lambda: repo.disabled,
        "downloads": lambda: 0,
        "likes": lambda: 0,
        "library_name": lambda: (card() or {}).get(
            "library_name", "transformers" if config() else None
        ),
        "tags": lambda: _tags(card(), config()),
        "pipeline_tag": lambda: (card() or {}).get("pipeline_tag"),
        "cardData": card,
        "config": config,
        "siblings": lambda: [sibling(p, b, blobs) for p, b in files().items()],
        "spaces": lambda: [],
        "usedStorage": lambda: sum(b.size for b in files().values()),
        "safetensors": safetensors,
        "downloadsAllTime": lambda: 0,
        "trendingScore": lambda: 0,
        "childrenModelCount": lambda: 0,
        "inferenceProviderMapping": lambda: [],
        "xetEnabled": lambda: False,
        "model-index": lambda: (card() or {}).get("model-index"),
        "baseModels": lambda: _base_models(card()),
    }
    if not expand:
        expand = [k for k in MODEL_INFO_FIELDS if k in full]
    body: dict[str, Any] = {
        "_id": object_id(repo.repo_id),
        "id": repo.repo_id,
        "modelId": repo.repo_id,
    }
    for key in expand:
        value = full[key]() if key in full else None
        if value is not None:
            body[key] = value
    return body


def _base_models(card: Mapping[str, Any] | None) -> dict[str, Any] | None:
    base = (card or {}).get("base_model")
    if not base:
        return None
    models = [base] if isinstance(base, str) else [str(b) for b in base if b]
    return {"relation": "finetune", "models": [{"id": m} for m in models]}


def _tags(card: Mapping[str, Any] | None, config: Mapping[str, Any] | None) -> list[str]:
    tags = [str(t) for t in (card or {}).get("tags", []) or []]
    if card and card.get("license"):
        tags.append(f"license:{card['license']}")
    if config and config.get("model_type"):
        tags.append(str(config["model_type"]))
    return tags


def commit_item(commit: Commit, formatted: bool) -> dict[str, Any]:
    """One commit of the commits listing; ``formatted`` adds the HTML-escaped title and message."""
    item: dict[str, Any] = {
        "id": commit.sha,
        "title": commit.title,
        "message": commit.message,
        "date": iso(commit.date),
        "authors": [{"user": a} for a in commit.authors],
    }
    if formatted:
        item["formatted"] = {
            "title": html.escape(commit.title),
            "message": html.escape(commit.message),
        }
    return item


def last_commit(commit: Commit) -> dict[str, str]:
    """The ``lastCommit`` object of a tree entry."""
    return {"id": commit.sha, "title": commit.title, "date": iso(commit.date)}


def file_entry(path: str, blob: Blob, last: Commit | None) -> dict[str, Any]:
    """A file of a tree listing; ``last`` (with expand) adds its last commit and security status."""
    item: dict[str, Any] = {"type": "file", "oid": blob.oid, "size": blob.size, "path": path}
    if blob.lfs:
        item["lfs"] = {
            "oid": blob.lfs.sha256,
            "size": blob.lfs.size,
            "pointerSize": blob.lfs.pointer_size,
        }
    if last is not None:
        item["lastCommit"] = last_commit(last)
        status = "unscanned" if path.endswith((".bin", ".pt", ".pkl", ".ckpt")) else "safe"
        item["securityFileStatus"] = {"status": status, "avScan": None, "pickleImportScan": None}
    return item


def folder_entry(path: str, oid: str, last: Commit | None) -> dict[str, Any]:
    """A directory of a tree listing; ``last`` (with expand) adds its last commit."""
    item: dict[str, Any] = {"type": "directory", "oid": oid, "size": 0, "path": path}
    if last is not None:
        item["lastCommit"] = last_commit(last)
    return item


def refs(repo: Repo, include_prs: bool) -> dict[str, Any]:
    """The refs answer: branches, tags and, with ``include_prs``, pull requests."""
    body: dict[str, Any] = {
        "branches": [
            {"name": name, "ref": f"refs/heads/{name}", "targetCommit": sha}
            for name, sha in sorted(repo.branches.items())
        ],
        "converts": [],
        "tags": [
            {"name": name, "ref": f"refs/tags/{name}", "targetCommit": sha}
            for name, sha in sorted(repo.tags.items())
        ],
    }
    if include_prs:
        body["pullRequests"] = [
            {"name": f"refs/pr/{n}", "ref": f"refs/pr/{n}", "targetCommit": sha}
            for n, sha in sorted(repo.pull_requests.items())
        ]
    return body


def list_item(
    repo: Repo,
    head: Commit,
    tree: Callable[[], Mapping[str, Blob]],
    *,
    full: bool,
    expand: list[str],
) -> dict[str, Any]:
    """One row of the models listing: a few keys, more with ``full``, all ``expand`` asks for."""
    info = model_info(repo, head, tree, blobs=False, expand=expand)
    if expand:
        return info
    keys = ["_id", "id", "modelId", "likes", "downloads", "private", "tags", "createdAt"]
    if full:
        keys += ["author", "sha", "lastModified", "gated", "disabled", "siblings", "library_name"]
    return {k: info[k] for k in keys if k in info}
