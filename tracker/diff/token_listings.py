"""How each token file lists added tokens, and the listings no token change records.

tokenizer_config.json lists a token as an ``added_tokens_decoder`` entry (id
-> content and flags), added_tokens.json as text -> id. A token change's
values are the token's listing at the file's own key path, so every key a
file writes is recorded with its value. ``relisted`` finds entries that
changed without their token changing (a decoder written out for tokens
added_tokens.json already held, a second file following the first) and
records them, one line per file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from storage.records import Change, Severity
from tracker.diff.common import json_equal
from tracker.diff.kept import KeptByIdentity
from tracker.untrusted.artifacts import Side

ARTIFACT = "tokenizer"
FLAGS = ("special", "lstrip", "rstrip", "single_word", "normalized")
SHOWN = 3
DECODER = "added_tokens_decoder"
KEPT: Final = 6
"""Token files whose tokens and listings each thread keeps (``tracker.diff.kept``): a
revision and its parent hold at most three each (``special_tokens.SOURCES``)."""
_TOKENS: KeptByIdentity[list[AddedToken]] = KeptByIdentity(KEPT)
_LISTINGS: KeptByIdentity[dict[str, Any]] = KeptByIdentity(KEPT)


@dataclass(frozen=True)
class AddedToken:
    """One added token as a revision lists it."""

    content: str
    id: int
    source: str
    flags: Mapping[str, bool] = field(default_factory=dict)
    entry: Mapping[str, Any] | None = None
    """The decoder's entry as written (every key, flags included); None in other files."""

    @property
    def special(self) -> bool:
        """The ``special`` flag; when unset, true only in tokenizer.json (it lists only those)."""
        return self.flags.get("special", self.source == "tokenizer.json")


def tokens_in(source: str, value: Any) -> list[AddedToken]:
    """The added tokens ``value`` (the file's parsed value) lists, by ``source``'s own format.

    Anything shaped otherwise lists none: upstream content never raises here. The list is
    kept for the same parsed value and shared: callers only read it.
    """
    return _TOKENS.get(source, (value,), lambda: _tokens_in(source, value))


def _tokens_in(source: str, value: Any) -> list[AddedToken]:
    if source == "tokenizer_config.json":
        decoder = value.get(DECODER) if isinstance(value, dict) else None
        if not isinstance(decoder, dict):
            return []
        return [
            AddedToken(
                str(entry["content"]),
                int(token_id),
                source,
                {k: entry[k] for k in FLAGS if isinstance(entry.get(k), bool)},
                entry,
            )
            for token_id, entry in decoder.items()
            if isinstance(entry, dict) and "content" in entry and str(token_id).isdigit()
        ]
    if source == "tokenizer.json":
        special = getattr(value, "special_tokens", None)
        if not isinstance(special, dict):
            return []
        return [AddedToken(text, token_id, source) for text, token_id in special.items()]
    if isinstance(value, dict):
        return [
            AddedToken(str(text), token_id, source)
            for text, token_id in value.items()
            if isinstance(token_id, int) and not isinstance(token_id, bool)
        ]
    return []


def listing(token: AddedToken) -> dict[str, Any]:
    """The token as its file lists it, at the file's key path."""
    if token.entry is not None:
        return {DECODER: {str(token.id): dict(token.entry)}}
    return {token.content: token.id}


def file_listing(source: str, side: Side) -> dict[str, Any]:
    """Every token listing of one file at its key path (tokenizer.json is not listed here:
    its facts keep only the special tokens); kept for the same parsed value and shared."""
    if source == "tokenizer.json":
        return {}
    value = side.value(source)
    return _LISTINGS.get(
        source, (value,), lambda: merged_listings(listing(t) for t in tokens_in(source, value))
    )


def relisted(old: Side, new: Side, sources: tuple[str, ...], said: list[Change]) -> list[Change]:
    """Per file, the listings that changed but that no token change above records.

    They are entries a file now writes (or stopped writing) for tokens that did not
    change: one line per file holding each such entry, so every listing is recorded.
    """
    changes = []
    for source in sources:
        before, after = file_listing(source, old), file_listing(source, new)
        if before == after:
            continue
        recorded_old = merged_listings(c.old for c in said if c.path == source)
        recorded_new = merged_listings(c.new for c in said if c.path == source)
        left_old, left_new = _unrecorded(source, before, after, recorded_old, recorded_new)
        if left_old or left_new:
            changes.append(_relisting(source, left_old, left_new))
    return changes


def entries(listed: Mapping[str, Any]) -> Mapping[str, Any]:
    """A listing's entries by key: the decoder's ids when it is all the listing holds."""
    decoder = listed.get(DECODER)
    return decoder if isinstance(decoder, dict) and len(listed) == 1 else listed


def _unrecorded(
    source: str,
    before: dict[str, Any],
    after: dict[str, Any],
    recorded_old: dict[str, Any],
    recorded_new: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Entries whose change is not what the recorded values hold, on either side."""
    old_entries, new_entries = entries(before), entries(after)
    seen_old, seen_new = entries(recorded_old), entries(recorded_new)
    left_old: dict[str, Any] = {}
    left_new: dict[str, Any] = {}
    for key in sorted(set(old_entries) | set(new_entries), key=str):
        was, now = old_entries.get(key), new_entries.get(key)
        if json_equal(was, now) or (
            json_equal(seen_old.get(key), was) and json_equal(seen_new.get(key), now)
        ):
            continue
        if was is not None:
            left_old[key] = was
        if now is not None:
            left_new[key] = now
    if source == "tokenizer_config.json":
        return (
            {DECODER: left_old} if left_old else {},
            {DECODER: left_new} if left_new else {},
        )
    return left_old, left_new


def _relisting(source: str, old: dict[str, Any], new: dict[str, Any]) -> Change:
    listed = {**entries(old), **entries(new)}
    decoder = DECODER in old or DECODER in new
    if decoder:
        by_id = sorted((int(k), _content(v, k)) for k, v in listed.items() if k.isdigit())
    else:
        by_id = sorted((v, k) for k, v in listed.items() if isinstance(v, int))
    ids = [i for i, _ in by_id]
    names = [name for _, name in by_id]
    span = f"ids {ids[0]}..{ids[-1]}" if len(ids) > 1 else f"id {ids[0]}" if ids else "no ids"
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    where = f"{DECODER} " if decoder else ""
    return Change(
        ARTIFACT,
        source,
        "special_tokens_relisted",
        old or None,
        new or None,
        Severity.INFO,
        f"{source}: {where}entries rewritten for {len(listed)} tokens ({span}: "
        f"{', '.join(names[:SHOWN])}{more}); the tokens change only as the other token lines say",
    )


def _content(entry: Any, key: str) -> str:
    return str(entry.get("content", key)) if isinstance(entry, dict) else key


def listings(tokens: Iterable[AddedToken]) -> dict[str, Any]:
    """The tokens' listings merged into one mapping: one side of a change to several tokens."""
    return merged_listings(listing(token) for token in tokens)


def merged_listings(values: Iterable[Any]) -> dict[str, Any]:
    """Per-token listings (or changes' values) merged into one mapping, later ones winning:
    decoder entries gather under one key.

    The decoder entries gather in one dict made here, added to in place: merging each
    listing into a new copy of all gathered so far, as before, took time quadratic in
    the tokens (a first upload lists thousands), for the same mapping.
    """
    into: dict[str, Any] = {}
    gathered: dict[str, Any] | None = None  # the decoder dict made here, once there is one
    for value in values:
        for key, item in (value if isinstance(value, dict) else {}).items():
            if key != DECODER or not isinstance(item, dict):
                into[key] = item
            elif gathered is not None and into[key] is gathered:
                gathered.update(item)
            else:
                gathered = into[key] = {**into.get(key, {}), **item}
    return into


__all__ = [
    "DECODER",
    "FLAGS",
    "AddedToken",
    "entries",
    "file_listing",
    "listing",
    "listings",
    "merged_listings",
    "relisted",
    "tokens_in",
]
