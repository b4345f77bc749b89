"""Changes in a revision's file list: code and pickles appearing, weight formats, odd names.

Nothing here opens a file: the list of paths with their content keys is
enough to say that a ``*.py`` appeared (code ``trust_remote_code`` would run),
that pickle-based weights appeared (loading them unpickles arbitrary code),
that ``.bin`` weights were converted to safetensors, or that a name could
escape a directory if anyone used it as a path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from storage.records import Change, FileEntry, Severity, Snapshot
from tracker.diff.common import plausible_size, shown_bytes
from tracker.untrusted.artifacts import Side

ARTIFACT_CODE = "code"
ARTIFACT_WEIGHTS = "weights"
ARTIFACT_REPO = "repo"
PICKLE_SUFFIXES = frozenset({".bin", ".pt", ".pkl", ".ckpt", ".pth", ".pickle"})
CODE_SUFFIXES = frozenset({".py"})
WEIGHT_SUFFIXES = PICKLE_SUFFIXES | frozenset({".safetensors", ".gguf", ".msgpack", ".h5", ".onnx"})
MAX_NAMES = 200


def is_unsafe_path(path: str) -> bool:
    """Whether a Hub file name could point outside a directory if joined onto one."""
    parts = path.replace("\\", "/").split("/")
    return (
        not path
        or path.startswith(("/", "\\"))
        or "\x00" in path
        or any(part in ("..", "") for part in parts)
        or (len(path) > 1 and path[1] == ":")
    )


def suffix(path: str) -> str:
    """The path's last suffix, lower-cased (``.BIN`` counts as ``.bin``); empty if it has none.

    ``PurePosixPath(path).suffix``, read off the text where the last part is a plain name
    (every listed file's is): the differs ask it of every file of every revision.
    """
    name = path.rpartition("/")[2]
    if name in ("", ".", ".."):  # a part pathlib normalises away
        return PurePosixPath(path).suffix.lower()
    dot = name.rfind(".")
    return name[dot:].lower() if 0 < dot < len(name) - 1 else ""


def is_pickle(path: str) -> bool:
    """Whether loading the file would unpickle it, so it can run arbitrary code."""
    return suffix(path) in PICKLE_SUFFIXES


def is_code(path: str) -> bool:
    """Whether the file is Python that ``trust_remote_code`` could run."""
    return suffix(path) in CODE_SUFFIXES


def diff_files(old: Sequence[FileEntry], new: Sequence[FileEntry]) -> list[Change]:
    """Changes between two revisions' file lists (``old`` empty for a first revision)."""
    before = {f.path: f for f in old}
    after = {f.path: f for f in new}
    changes = _unsafe(before, after)
    changes += _code(before, after)
    changes += _pickles(before, after)
    changes += _format(before, after)
    changes += _weights_rewritten(before, after)
    return changes


def _names(paths: Sequence[str], shown: int = 5) -> str:
    listed = ", ".join(paths[:shown])
    return listed + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def _unsafe(before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]) -> list[Change]:
    bad = sorted(p for p in after if is_unsafe_path(p) and p not in before)
    if not bad:
        return []
    return [
        Change(
            ARTIFACT_REPO,
            bad[0],
            "unsafe_path",
            None,
            bad[:MAX_NAMES],
            Severity.HIGH,
            f"file names that could escape a directory: {_names(bad)}; never fetched",
        )
    ]


def _code(before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]) -> list[Change]:
    changes = []
    for path in sorted(p for p in after if is_code(p)):
        if path not in before:
            changes.append(
                Change(
                    ARTIFACT_CODE,
                    path,
                    "added",
                    None,
                    after[path].content_key,
                    Severity.HIGH,
                    f"custom code {path} added: trust_remote_code would run it",
                )
            )
        elif before[path].content_key != after[path].content_key:
            changes.append(
                Change(
                    ARTIFACT_CODE,
                    path,
                    "modified",
                    before[path].content_key,
                    after[path].content_key,
                    Severity.HIGH,
                    f"custom code {path} changed: trust_remote_code runs new code",
                )
            )
    for path in sorted(p for p in before if is_code(p) and p not in after):
        changes.append(
            Change(
                ARTIFACT_CODE,
                path,
                "removed",
                before[path].content_key,
                None,
                Severity.MODERATE,
                f"custom code {path} removed: loaders relying on it break",
            )
        )
    return changes


def _pickles(before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]) -> list[Change]:
    added = sorted(p for p in after if is_pickle(p) and p not in before)
    if not added:
        return []
    return [
        Change(
            ARTIFACT_WEIGHTS,
            added[0],
            "pickle_added",
            None,
            added[:MAX_NAMES],
            Severity.HIGH,
            f"pickle-based files added ({_names(added)}): loading them unpickles, "
            "which can run arbitrary code",
        )
    ]


def _format(before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]) -> list[Change]:
    old_formats, new_formats = _weight_formats(before), _weight_formats(after)
    if not old_formats or old_formats == new_formats:
        return []
    gone = sorted(old_formats - new_formats)
    came = sorted(new_formats - old_formats)
    if not gone:
        return []
    wording = f"{', '.join(gone)} -> {', '.join(came) or 'none'}"
    return [
        Change(
            ARTIFACT_WEIGHTS,
            "",
            "format_changed",
            sorted(old_formats),
            sorted(new_formats),
            Severity.HIGH,
            f"weight format {wording}: callers loading the {', '.join(gone)} files break",
        )
    ]


def _weight_formats(files: Mapping[str, FileEntry]) -> set[str]:
    return {suffix(p) for p in files if suffix(p) in WEIGHT_SUFFIXES and "/" not in p}


def _weights_rewritten(
    before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]
) -> list[Change]:
    changed = sorted(
        p
        for p in after
        if suffix(p) in WEIGHT_SUFFIXES
        and p in before
        and before[p].content_key != after[p].content_key
    )
    if not changed:
        return []
    return [
        Change(
            ARTIFACT_WEIGHTS,
            changed[0],
            "weights_changed",
            {p: before[p].size for p in changed[:MAX_NAMES]},
            {p: after[p].size for p in changed[:MAX_NAMES]},
            Severity.MODERATE,
            f"{len(changed)} weight files have new content ({_names(changed, 2)}); "
            f"{_size_delta(changed, before, after)}: outputs may differ from the pinned revision",
        )
    ]


def _size_delta(
    changed: Sequence[str], before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]
) -> str:
    """The files' total size change, unless a side declared a size no file has: then that
    is what the line says (a delta from it would be a nonsense number of bytes)."""
    for side, files in (("previous", before), ("new", after)):
        odd = [p for p in changed if not plausible_size(files[p].size)]
        if odd:
            return (
                f"sizes not compared: the {side} revision lists {len(odd)} at an implausible "
                f"size ({shown_bytes(files[odd[0]].size)} bytes for {odd[0]})"
            )
    delta = sum(after[p].size - before[p].size for p in changed)
    return f"total size {delta:+,} bytes"


def diff_repo(kind: str, old: Side | None, new: Side) -> list[Change]:
    """The repo row's differ: the file list, and text files newly over their size limit."""
    before = old.snapshot if old is not None else None
    return diff_files(before.files if before else (), new.snapshot.files) + _oversized(
        before, new.snapshot
    )


def _oversized(before: Snapshot | None, after: Snapshot) -> list[Change]:
    sizes = {f.path: f.size for f in after.files}
    known = set(before.oversized) if before else set()
    return [
        Change(
            ARTIFACT_REPO,
            path,
            "oversized",
            None,
            sizes.get(path),
            Severity.MODERATE,
            f"{path} is {sizes.get(path, 0):,} bytes, over its size limit: not loaded, "
            "so changes inside it are not seen",
        )
        for path in after.oversized
        if path not in known
    ]


__all__ = ["diff_files", "diff_repo", "is_code", "is_pickle", "is_unsafe_path", "suffix"]
