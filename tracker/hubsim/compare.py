"""The compare route's body: what changed between two revisions, as git prints it.

``GET /api/models/{repo}/compare/{a}..{b}`` answers a unified diff (text files in full,
``Binary files ... differ`` for LFS ones); with ``raw=true`` one line per changed file
in the layout the hf-hub Rust client parses (hf-hub src/commits/diff.rs,
``parse_hf_diff_line``): ``{T|B} {new size}\\t:{old mode} {new mode} {old blob}...
{new blob}... {status}\\t{path}``, the blob ids of git's raw diff format with the Hub's
text/binary marker and size in front.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping

from tracker.hubsim.blobs import Blob

NULL_ID = "0" * 40
MODE = "100644"


def changed(old: Mapping[str, Blob], new: Mapping[str, Blob]) -> list[tuple[str, str]]:
    """(status, path) for every path that differs, sorted by path; A, D or M."""
    rows = []
    for path in sorted(set(old) | set(new)):
        if path not in old:
            rows.append(("A", path))
        elif path not in new:
            rows.append(("D", path))
        elif old[path].oid != new[path].oid:
            rows.append(("M", path))
    return rows


def raw_diff(old: Mapping[str, Blob], new: Mapping[str, Blob]) -> str:
    """The ``raw=true`` answer: a line per changed path, laid out as hf-hub's Rust client parses."""
    lines = []
    for status, path in changed(old, new):
        before, after = old.get(path), new.get(path)
        kind = "B" if any(b is not None and b.lfs is not None for b in (before, after)) else "T"
        size = after.size if after else 0
        old_mode, new_mode = (MODE if before else "000000"), (MODE if after else "000000")
        old_id, new_id = (before.oid if before else NULL_ID), (after.oid if after else NULL_ID)
        lines.append(
            f"{kind} {size}\t:{old_mode} {new_mode} {old_id}... {new_id}... {status}\t{path}\n"
        )
    return "".join(lines)


def unified_diff(old: Mapping[str, Blob], new: Mapping[str, Blob]) -> str:
    """git's unified diff of every changed path; LFS or binary files say only that they differ."""
    parts = []
    for status, path in changed(old, new):
        before, after = old.get(path), new.get(path)
        header = [f"diff --git a/{path} b/{path}\n"]
        if status == "A":
            header.append(f"new file mode {MODE}\n")
        elif status == "D":
            header.append(f"deleted file mode {MODE}\n")
        old_id, new_id = (before.oid if before else NULL_ID), (after.oid if after else NULL_ID)
        header.append(f"index {old_id[:7]}..{new_id[:7]}\n")
        left = "/dev/null" if before is None else f"a/{path}"
        right = "/dev/null" if after is None else f"b/{path}"
        old_text = before.text() if before is not None else b""
        new_text = after.text() if after is not None else b""
        lfs = any(blob is not None and blob.lfs is not None for blob in (before, after))
        if lfs or old_text is None or new_text is None or b"\0" in old_text + new_text:
            parts.append("".join(header) + f"Binary files {left} and {right} differ\n")
            continue
        body = difflib.unified_diff(
            old_text.decode("utf-8", "replace").splitlines(keepends=True),
            new_text.decode("utf-8", "replace").splitlines(keepends=True),
            left,
            right,
        )
        parts.append("".join(header) + "".join(_newline_terminated(body)))
    return "".join(parts)


def _newline_terminated(lines: Iterator[str]) -> list[str]:
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return out
