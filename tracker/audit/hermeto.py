"""Hermeto's ``huggingface.lock.yaml`` as a pin source.

Hermeto (the hermetic-build prefetcher) pins Hugging Face models in a YAML lock
file; its schema (hermeto/core/package_managers/huggingface/models.py) is:

    metadata:
      version: "1.0"
    models:
      - repository: "microsoft/deberta-v3-base"   # or a legacy id such as "gpt2"
        revision: "<40 hex>"                       # a full commit sha, required
        ref: main                                  # optional, default "main"
        type: model                                # or "dataset"
        include_patterns: ["*.safetensors"]        # optional

Unknown keys are refused as Hermeto refuses them; ``dataset`` entries are
not models and are passed over. Each pin points at its entry's line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tracker.audit.pins import (
    MAX_LOCK_BYTES,
    AuditInputError,
    Origin,
    Pin,
    read_bounded_text,
    repo_pin_id,
)

SHA = re.compile(r"^[0-9a-fA-F]{40}$")
ENTRY_KEYS = frozenset({"repository", "revision", "ref", "type", "include_patterns"})


def is_hermeto_lock(path: Path) -> bool:
    """Hermeto's lock files are YAML; the audit's own are TOML."""
    return path.suffix.lower() in (".yaml", ".yml")


def round_trip_yaml() -> YAML:
    """ruamel.yaml in round-trip mode, quotes kept, so a rewrite changes only what it sets."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    return yaml


def load_hermeto_lock(path: Path) -> Any:
    """The lock file as ruamel.yaml's round-trip document (it keeps comments and lines)."""
    text = read_bounded_text(path, MAX_LOCK_BYTES, "a lock file")
    try:
        return round_trip_yaml().load(text)
    except YAMLError as exc:
        raise AuditInputError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from exc


def model_entries(path: Path, document: Any) -> list[tuple[int, Any]]:
    """(index in ``models``, entry) of every model entry, after checking the file's shape."""
    if not isinstance(document, dict) or set(document) != {"metadata", "models"}:
        raise AuditInputError(f"{path}: a Hermeto lock file has exactly 'metadata' and 'models'")
    metadata = document["metadata"]
    if not isinstance(metadata, dict) or metadata.get("version") != "1.0" or len(metadata) != 1:
        raise AuditInputError(f'{path}: metadata must be {{version: "1.0"}}')
    models = document["models"]
    if not isinstance(models, list):
        raise AuditInputError(f"{path}: 'models' must be a list")
    entries = []
    for index, entry in enumerate(models):
        where = f"{path}:{_line(entry)}"
        _check(entry, where)
        if entry.get("type", "model") == "model":
            entries.append((index, entry))
    return entries


def pins_from_hermeto_lock(path: Path) -> list[Pin]:
    """Every model entry of a Hermeto lock file, in file order."""
    document = load_hermeto_lock(path)
    return [
        Pin(
            repo_pin_id(str(entry["repository"]), f"{path}:{_line(entry)}"),
            str(entry["revision"]).lower(),
            Origin("lock file", path, _line(entry)),
        )
        for _, entry in model_entries(path, document)
    ]


def _check(entry: Any, where: str) -> None:
    if not isinstance(entry, dict):
        raise AuditInputError(f"{where}: a models entry must be a mapping")
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        raise AuditInputError(
            f"{where}: unknown keys {sorted(unknown)} (known: {sorted(ENTRY_KEYS)})"
        )
    if not isinstance(entry.get("repository"), str) or not entry["repository"]:
        raise AuditInputError(f"{where}: 'repository' is required")
    if not isinstance(entry.get("revision"), str) or not SHA.match(entry["revision"]):
        raise AuditInputError(f"{where}: 'revision' must be a 40-character commit sha")
    if entry.get("type", "model") not in ("model", "dataset"):
        raise AuditInputError(f"{where}: 'type' must be model or dataset")


def _line(entry: Any) -> int | None:
    """The 1-based line of a mapping in the file (ruamel.yaml counts from 0)."""
    position = getattr(entry, "lc", None)
    return None if position is None else int(position.line) + 1


__all__ = [
    "is_hermeto_lock",
    "load_hermeto_lock",
    "model_entries",
    "pins_from_hermeto_lock",
    "round_trip_yaml",
]
