"""The text ``history`` and ``diff`` print, rendered from their JSON documents alone.

Standard library only: a command answered by a running daemon prints without importing
storage. ``tracker.reads.documents`` builds the documents.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def json_text(document: Any) -> str:
    """``--json`` output: the document indented, non-ASCII kept as it is."""
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"


def history_text(entries: Sequence[Mapping[str, Any]]) -> str:
    """One line per revision, newest first (sha, day, title), its changes indented below."""
    lines = []
    for entry in entries:
        flag = "" if entry["on_main"] else " (no longer on main)"
        # the date is ISO 8601, so its first ten characters are the day
        lines.append(f"{entry['sha'][:12]} {entry['date'][:10]} {entry['title']}{flag}")
        lines += _change_lines(entry["changes"])
    return "".join(line + "\n" for line in lines)


def diff_text(document: Mapping[str, Any]) -> str:
    """A summary line (both shas, how many changes), then each change."""
    changes = document["changes"]
    head = (
        f"{document['repo']} {document['old'][:12]} -> {document['new'][:12]}: "
        f"{len(changes)} changes"
    )
    return "".join(line + "\n" for line in [head, *_change_lines(changes)])


def _change_lines(changes: Sequence[Mapping[str, Any]], indent: str = "  ") -> list[str]:
    return [f"{indent}[{change['severity']}] {change['message']}" for change in changes]


__all__ = ["diff_text", "history_text", "json_text"]
