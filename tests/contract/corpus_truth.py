"""What the corpus itself says a repo holds, read straight from MANIFEST.json and EVENTS.json.

The contract suite compares both clients' answers with these figures, not with the
emulator's own view, so an emulator that replays the corpus wrongly fails too. The rules
are the corpus's: an entry's notes end ``(main)`` when its commit is on main; a path
deleted twice was deleted on main the second time (the first was the pull request's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX_SUFFIXES = (".safetensors.index.json", ".bin.index.json", ".msgpack.index.json")
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1}  # fmt: skip


@dataclass(frozen=True)
class RepoTruth:
    repo_id: str
    main: list[str]
    """Main's commit shas, newest first, without the Hub's own "initial commit"."""
    files: dict[str, bytes]
    """Every committed file at main's head, with its content."""
    pull_requests: set[int]

    @property
    def head(self) -> str:
        return self.main[0]

    @property
    def commit_count(self) -> int:
        return len(self.main) + 1  # the Hub's "initial commit"

    def index(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.files["model.safetensors.index.json"])
        return document

    def listed_files(self) -> set[str]:
        """Committed files, the Hub's .gitattributes, and every shard an index names."""
        listed = set(self.files) | {".gitattributes"}
        for path, content in self.files.items():
            if path.endswith(INDEX_SUFFIXES):
                folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
                shards = json.loads(content).get("weight_map", {}).values()
                listed |= {folder + shard for shard in shards}
        return listed


def _on_main(notes: str) -> bool:
    return "(main)" in notes


def truth(corpus_dir: Path, repo_id: str) -> RepoTruth:
    manifest = json.loads((corpus_dir / "MANIFEST.json").read_text(encoding="utf-8"))
    events = json.loads((corpus_dir / "EVENTS.json").read_text(encoding="utf-8"))
    entries = [e for e in manifest if e["repo_id"] == repo_id]
    deletions = [e for e in events if e["repo_id"] == repo_id and e["notes"].startswith("DELETED")]
    last_deletion = {e["file"]: e for e in deletions}  # the later one is main's
    steps: list[tuple[str, int, str, str, str | None]] = []  # date, order, sha, kind, path
    for order, entry in enumerate(entries):
        if _on_main(entry["notes"]):
            steps.append((entry["date"], order, entry["revision"], "add", entry["file"]))
    for order, entry in enumerate(last_deletion.values(), start=len(entries)):
        steps.append((entry["date"], order, entry["revision"], "delete", entry["file"]))
    steps.sort()
    files: dict[str, bytes] = {}
    shas: list[str] = []
    for _date, _order, sha, kind, path in steps:
        if sha not in shas:
            shas.append(sha)
        if kind == "add" and path is not None:
            files[path] = (corpus_dir / repo_id / sha / path).read_bytes()
        elif path is not None:
            files.pop(path, None)
    prs = {
        int(e["notes"].split("refs/pr/")[1].split(")")[0])
        for e in entries
        if "(PR refs/pr/" in e["notes"]
    }
    return RepoTruth(repo_id, list(reversed(shas)), files, prs)


def parameter_bytes(counts: Mapping[str, int]) -> int:
    """Bytes the parameters take at their dtypes: an index's ``metadata.total_size``."""
    return sum(DTYPE_BYTES[dtype] * n for dtype, n in counts.items())
