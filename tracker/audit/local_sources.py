"""Pins found on the user's machine: the Hugging Face cache and Python sources.

The cache is read with huggingface_hub's own ``scan_cache_dir`` (every cached
model repo and every revision in it, with the refs that point there). Sources
are parsed with ``ast``, never matched with regular expressions and never
imported: only calls whose repo id is a string literal count, as a reader of
the code would see it:

- ``AnyClass.from_pretrained("org/name", revision="...")`` (or
  ``pretrained_model_name_or_path=``),
- ``hf_hub_download(repo_id="org/name", ...)``, ``snapshot_download(...)``
  (first argument or ``repo_id=``),
- ``pipeline(task, model="org/name", revision=...)`` (second argument or ``model=``).

``revision=`` pins the model; ``code_revision=`` and ``tokenizer_revision=``
literals are pins of their own on the same repo (the code or tokenizer is
loaded at that revision, whatever ``revision`` says).

A literal that is not ``ORG/NAME`` (a local path, a bare name) is not a Hub
pin and is passed over; so is every call built from variables.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from huggingface_hub import scan_cache_dir
from huggingface_hub.errors import CacheNotFound, CorruptedCacheException

from tracker.audit.pins import AuditInputError, Origin, Pin
from tracker.errors import RepoIdError
from tracker.hub.repo_id import parse_repo_ref

MAX_SOURCE_BYTES = 2 * 2**20
SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", "build"})
REPO_ARGUMENT = {
    "from_pretrained": (0, "pretrained_model_name_or_path"),
    "hf_hub_download": (0, "repo_id"),
    "snapshot_download": (0, "repo_id"),
    "pipeline": (1, "model"),
}
"""Callee name -> (position, keyword) of its repo id argument."""
EXTRA_REVISIONS = ("code_revision", "tokenizer_revision")
"""Keywords that pin another part of the same repo: transformers' ``code_revision``
(the revision its remote code is loaded at) and pipeline()'s ``tokenizer_revision``."""


def pins_from_hf_cache(cache_dir: Path | None) -> list[Pin]:
    """Every revision of every model repo in the cache (``None``: huggingface_hub's default)."""
    try:
        info = scan_cache_dir(cache_dir)
    except (CacheNotFound, CorruptedCacheException) as exc:
        raise AuditInputError(f"Hugging Face cache: {exc}") from exc
    pins = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        for revision in sorted(repo.revisions, key=lambda r: r.commit_hash):
            refs = ", ".join(sorted(revision.refs))
            where = f"HF cache ({refs})" if refs else "HF cache"
            pins.append(
                Pin(repo.repo_id, revision.commit_hash, Origin(where, revision.snapshot_path))
            )
    return pins


def pins_from_sources(root: Path) -> list[Pin]:
    """Literal Hub pins in every ``*.py`` file under ``root`` (file order, then line order)."""
    if not root.is_dir():
        raise AuditInputError(f"{root}: not a directory")
    return [pin for path in _python_files(root) for pin in pins_in_file(path)]


def pins_in_file(path: Path) -> list[Pin]:
    """The pins of one Python file; a file that does not parse is passed over, not fatal."""
    if path.stat().st_size > MAX_SOURCE_BYTES:
        return []
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return []
    pins = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            pins.extend(_pins_of_call(node, path))
    return sorted(pins, key=lambda p: p.origin.line or 0)


def _pins_of_call(call: ast.Call, path: Path) -> list[Pin]:
    """The model pin of a call, plus one per ``code_revision=`` / ``tokenizer_revision=``
    literal: transformers loads the repo's code (and pipeline() its tokenizer) at those."""
    name = _callee(call.func)
    if name not in REPO_ARGUMENT:
        return []
    position, keyword = REPO_ARGUMENT[name]
    repo = _literal(_argument(call, position, keyword))
    if repo is None:
        return []
    try:
        ref = parse_repo_ref(repo)  # a legacy "gpt2" too: resolved by the Hub before the audit
    except RepoIdError:
        return []
    if ref.revision is not None:
        return []
    repo_id = ref.repo_id
    revision = _literal(_argument(call, None, "revision"))
    pins = [Pin(repo_id, revision, Origin(f"{name}()", path, call.lineno))]
    for extra in EXTRA_REVISIONS:
        pinned = _literal(_argument(call, None, extra))
        if pinned is not None and pinned != revision:
            pins.append(Pin(repo_id, pinned, Origin(f"{name}() {extra}", path, call.lineno)))
    return pins


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _argument(call: ast.Call, position: int | None, keyword: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _python_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if SKIPPED_DIRS.isdisjoint(path.relative_to(root).parts) and path.is_file():
            yield path


__all__ = ["pins_from_hf_cache", "pins_from_sources", "pins_in_file"]
