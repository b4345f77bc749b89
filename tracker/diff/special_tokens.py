"""Special and added tokens, one line per token, however many files list it.

A token such as ``<|eot_id|>`` may be listed three times: in tokenizer.json's
added tokens, in tokenizer_config.json's ``added_tokens_decoder`` and in
added_tokens.json. Each file is read into one table (token text -> id and
the flags the decoder gives), and the two revisions' tables are compared
once: a token added, removed, given a new id, or whose flags (``special``,
``lstrip``, ``rstrip``, ``single_word``, ``normalized``) changed is named by
its text. Many ids moving by the same amount (all of Whisper's language
tokens by +1) is one change naming the shift and the range. A token gone and
another come at the same id is one rename.

A change's values are the token's listing as its file writes it, at the
file's own key path, so every key of every listing is recorded with its
value: ``{"added_tokens_decoder": {"128009": {"content": ..., "special":
...}}}`` for tokenizer_config.json, ``{"<|en|>": 50259}`` for
added_tokens.json. Listings that changed without the token changing (a
decoder written out for tokens added_tokens.json already held, a second file
following the first) are one line per file, holding each rewritten entry.

A file that does not parse on either side is left out of both tables (its
``parse_error`` is reported on its own), so a broken file never reads as
every token removed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from storage.records import Change, Severity
from tracker.diff.common import DiffContext, format_value
from tracker.diff.kept import KeptByIdentity
from tracker.diff.token_listings import (
    FLAGS,
    KEPT,
    AddedToken,
    listing,
    listings,
    merged_listings,
    relisted,
    tokens_in,
)
from tracker.untrusted.artifacts import Side

ARTIFACT = "tokenizer"
SOURCES = ("tokenizer_config.json", "tokenizer.json", "added_tokens.json")
"""Where added tokens are listed, most detailed first (the decoder carries the flags)."""
FLAG_SEVERITY: Mapping[str, Severity] = {
    "special": Severity.MODERATE,  # skip_special_tokens drops it or keeps it when decoding
    "lstrip": Severity.MODERATE,  # whitespace before it is eaten or kept when encoding
    "rstrip": Severity.MODERATE,
    "single_word": Severity.MODERATE,  # matched inside words or only as a whole word
    "normalized": Severity.LOW,  # matters only where the normalizer rewrites text
}
SHIFT_MIN = 5
"""At least this many tokens moving by the same amount is reported as one shift."""
MAX_LINES = 20
"""More per-token changes of one kind than this collapse into one change naming the first."""
SHOWN = 3
_TABLES: KeptByIdentity[dict[str, AddedToken]] = KeptByIdentity(KEPT)
_NAMES: KeptByIdentity[dict[int, str]] = KeptByIdentity(KEPT)


def token_table(side: Side, sources: tuple[str, ...] = SOURCES) -> dict[str, AddedToken]:
    """token text -> the token, merged over ``sources`` (the first file naming it wins);
    kept for the same parsed values and shared: callers only read it."""
    values = tuple(side.value(source) for source in sources)
    return _TABLES.get(sources, values, lambda: _merged(sources, values))


def _merged(sources: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, AddedToken]:
    table: dict[str, AddedToken] = {}
    for source, value in zip(sources, values, strict=True):
        for token in tokens_in(source, value):
            table.setdefault(token.content, token)
    return table


def token_names(side: Side) -> dict[int, str]:
    """token id -> text at one side (the first file naming a text wins, and of two texts
    at one id the one listed first); kept for the same parsed values and shared."""
    values = tuple(side.value(source) for source in SOURCES)
    return _NAMES.get(SOURCES, values, lambda: _named(token_table(side)))


def _named(table: dict[str, AddedToken]) -> dict[int, str]:
    return {t.id: t.content for t in reversed(table.values())}


def token_context(old: Side | None, new: Side) -> DiffContext:
    """Token names at both revisions, so a message can say ``<|eot_id|>`` for id 128009.

    Every JSON file's differ gets one, and few messages name a token: each side's
    names are read from its token files when a message first asks (``TokenNames``).
    """
    return DiffContext(token_names=TokenNames(new), old_token_names=TokenNames(old))


class TokenNames(Mapping[int, str]):
    """token id -> text at one side (none without a side), read from its token files on the
    first lookup, not when the differ is set up."""

    def __init__(self, side: Side | None) -> None:
        self._side = side
        self._names: dict[int, str] | None = None

    def _read(self) -> dict[int, str]:
        if self._names is None:
            self._names = {} if self._side is None else token_names(self._side)
        return self._names

    def __getitem__(self, token_id: int) -> str:
        return self._read()[token_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def diff_special_tokens(kind: str, old: Side | None, new: Side) -> list[Change]:
    """Added tokens gained, lost, renumbered or re-flagged, one change per token (or shift)."""
    if old is None or not any(
        old.snapshot.texts.get(p) != new.snapshot.texts.get(p) for p in SOURCES
    ):
        return []
    sources = tuple(p for p in SOURCES if _usable(old, p) and _usable(new, p))
    before, after = token_table(old, sources), token_table(new, sources)
    added = [after[t] for t in after if t not in before]
    removed = [before[t] for t in before if t not in after]
    moved = [(before[t], after[t]) for t in after if t in before and before[t].id != after[t].id]
    shifts, moved = _shifts(moved)
    renamed, added, removed = _renames(added, removed)
    changes = shifts
    changes += _capped("special_token_renamed", renamed)
    changes += _capped(
        "special_token_added", [(t.id, _added(t)) for t in sorted(added, key=_by_id)]
    )
    changes += _capped(
        "special_token_removed", [(t.id, _removed(t)) for t in sorted(removed, key=_by_id)]
    )
    changes += _capped("special_token_moved", [(b.id, _moved(a, b)) for a, b in moved])
    flagged = [
        (after[text].id, change)
        for text in sorted(set(before) & set(after), key=lambda t: after[t].id)
        if (change := _flag_change(before[text], after[text])) is not None
    ]
    changes += _capped("special_token_changed", flagged)
    return changes + relisted(old, new, sources, changes)


def _usable(side: Side, path: str) -> bool:
    parsed = side.parsed(path)
    return parsed is None or parsed.error is None


def _by_id(token: AddedToken) -> int:
    return token.id


def _kind_word(token: AddedToken) -> str:
    return "special token" if token.special else "added token"


def _added(token: AddedToken) -> Change:
    return Change(
        ARTIFACT,
        token.source,
        "special_token_added",
        None,
        listing(token),
        Severity.MODERATE,
        f"{token.source}: {_kind_word(token)} {token.content} added (id {token.id})",
    )


def _removed(token: AddedToken) -> Change:
    return Change(
        ARTIFACT,
        token.source,
        "special_token_removed",
        listing(token),
        None,
        Severity.HIGH,
        f"{token.source}: {_kind_word(token)} {token.content} removed (was id {token.id}): "
        "unless the base vocabulary holds it, text that held it now encodes differently",
    )


def _moved(before: AddedToken, after: AddedToken) -> Change:
    return Change(
        ARTIFACT,
        after.source,
        "special_token_moved",
        listing(before),
        listing(after),
        Severity.HIGH,
        f"{after.source}: {_kind_word(after)} {after.content} id {before.id} -> {after.id}: "
        "a model trained on the old id emits or expects another token",
    )


def _renames(
    added: list[AddedToken], removed: list[AddedToken]
) -> tuple[list[tuple[int, Change]], list[AddedToken], list[AddedToken]]:
    """A token gone and another come at the same id is one token renamed (Whisper's <|iw|>)."""
    gone = {t.id: t for t in removed}
    renamed = [(gone[t.id], t) for t in sorted(added, key=_by_id) if t.id in gone]
    paired = {t.id for _, t in renamed}
    changes = [
        (
            after.id,
            Change(
                ARTIFACT,
                after.source,
                "special_token_renamed",
                listing(before),
                listing(after),
                Severity.HIGH,
                f"{after.source}: {_kind_word(after)} id {after.id} renamed {before.content} -> "
                f"{after.content}: text that held {before.content} no longer maps to it",
            ),
        )
        for before, after in renamed
    ]
    rest_added = [t for t in added if t.id not in paired]
    return changes, rest_added, [t for t in removed if t.id not in paired]


def _flag_change(before: AddedToken, after: AddedToken) -> Change | None:
    """One line per token naming each flag that changed; None if none did."""
    flipped = [
        flag
        for flag in FLAGS
        # a file that does not say is not a change of the flag
        if None not in (before.flags.get(flag), after.flags.get(flag))
        and before.flags[flag] != after.flags[flag]
    ]
    if not flipped:
        return None
    what = ", ".join(
        f"{flag} {format_value(before.flags[flag])} -> {format_value(after.flags[flag])}"
        for flag in flipped
    )
    return Change(
        ARTIFACT,
        after.source,
        "special_token_changed",
        listing(before),
        listing(after),
        max(FLAG_SEVERITY[flag] for flag in flipped),
        f"{after.source}: {_kind_word(after)} {after.content} (id {after.id}): {what}",
    )


def _shifts(
    moved: list[tuple[AddedToken, AddedToken]],
) -> tuple[list[Change], list[tuple[AddedToken, AddedToken]]]:
    """One change per id offset shared by SHIFT_MIN or more tokens; the rest stay per token."""
    by_offset: dict[int, list[tuple[AddedToken, AddedToken]]] = {}
    for pair in moved:
        by_offset.setdefault(pair[1].id - pair[0].id, []).append(pair)
    changes: list[Change] = []
    rest: list[tuple[AddedToken, AddedToken]] = []
    for offset, pairs in sorted(by_offset.items()):
        pairs.sort(key=lambda p: p[0].id)
        if len(pairs) < SHIFT_MIN:
            rest.extend(pairs)
            continue
        first, last = pairs[0], pairs[-1]
        shown = ", ".join(p[1].content for p in pairs[:SHOWN])
        more = f" and {len(pairs) - SHOWN} more" if len(pairs) > SHOWN else ""
        changes.append(
            Change(
                ARTIFACT,
                first[1].source,
                "special_tokens_shifted",
                listings(a for a, _ in pairs),
                listings(b for _, b in pairs),
                Severity.HIGH,
                f"{first[1].source}: {len(pairs)} added tokens shifted by {offset:+d}, ids "
                f"{first[0].id}..{last[0].id} -> {first[1].id}..{last[1].id} ({shown}{more}): "
                "a model trained on the old ids emits or expects other tokens",
            )
        )
    rest.sort(key=lambda p: p[1].id)
    return changes, rest


def _capped(kind: str, found: list[tuple[int, Change]]) -> list[Change]:
    """Per file, up to MAX_LINES changes as they are; more as one change holding every
    value, naming how many tokens, the ids they span and the first (all of that file)."""
    by_file: dict[str, list[tuple[int, Change]]] = {}
    for token_id, change in found:
        by_file.setdefault(change.path, []).append((token_id, change))
    capped: list[Change] = []
    for path, pairs in by_file.items():
        if len(pairs) <= MAX_LINES:
            capped += [change for _, change in pairs]
            continue
        old = merged_listings(change.old for _, change in pairs)
        new = merged_listings(change.new for _, change in pairs)
        ids = sorted(token_id for token_id, _ in pairs)
        first = min(pairs, key=lambda pair: pair[0])[1]
        what = kind.removeprefix("special_token_").replace("_", " ")
        capped.append(
            Change(
                ARTIFACT,
                path,
                kind,
                old or None,
                new or None,
                max(c.severity for _, c in pairs),
                f"{path}: {len(pairs)} tokens {what}, {_id_span(ids)}; first: "
                f"{first.message.removeprefix(f'{path}: ')}",
            )
        )
    return capped


def _id_span(ids: list[int]) -> str:
    """The ids a capped line covers: a range, said to have gaps when it has them, so a
    range never reads as fewer ids than the line counts."""
    if len(set(ids)) == len(ids) and ids[-1] - ids[0] + 1 == len(ids):
        return f"ids {ids[0]}..{ids[-1]}"
    return f"ids {ids[0]}..{ids[-1]} (not contiguous)"


__all__ = [
    "AddedToken",
    "TokenNames",
    "diff_special_tokens",
    "token_context",
    "token_names",
    "token_table",
]
