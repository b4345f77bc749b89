"""tokenizer.json changes judged by what the tokenizer does, not by its bytes.

Both versions are loaded with the ``tokenizers`` library (a Rust parser of
the JSON; nothing is executed) and encode the fixed texts in
``data/probe_texts.json``. The differ reports the vocabulary size and each
probe text whose ids changed: a model fine-tuned on the old ids no longer
matches the new tokenizer. Special and added tokens, which three files list,
are compared once by ``tracker.diff.special_tokens``; the tokenizer row's
differ, ``diff_tokenizer_kind``, runs both.

Loading runs in an isolated worker (``tracker.untrusted.isolation``) under its memory,
CPU and wall-clock limits: the file is upstream input, and a native parser
given a hostile one may allocate without bound or crash. Only the summary
(``TokenizerFacts``) comes back, and it is kept by the file's content and the probe
texts (``tracker.untrusted.evaluated``): a walk parses each content once already, and
the next check of the repo meets its parent's file again. A file stopped by a limit is
not kept, and loads again, under the same limits, the next time it is met.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from tokenizers import Tokenizer

from storage.records import Change, Severity
from tracker.diff.common import format_value, per_file
from tracker.diff.special_tokens import diff_special_tokens
from tracker.errors import TokenizerParseError
from tracker.untrusted.artifacts import Side
from tracker.untrusted.evaluated import EvaluatedByContent, content_key
from tracker.untrusted.isolation import LimitExceeded, RemoteError, default_pool

ARTIFACT = "tokenizer"
PARSE_WALL_SECONDS = 30.0
"""Wall time to load one tokenizer.json (the largest real ones, ~35 MB, take ~2 s)."""
LOADED_BUDGET = 4 * 1024 * 1024
"""Pickled bytes of tokenizer summaries kept (one is a few KB, more with many special tokens)."""


@dataclass(frozen=True)
class TokenizerFacts:
    """What the differ compares about one tokenizer.json version."""

    vocab_size: int
    special_tokens: dict[str, int]
    encodings: tuple[tuple[int, ...], ...]


_LOADED: EvaluatedByContent[TokenizerFacts | str] = EvaluatedByContent(LOADED_BUDGET)


@cache
def probe_texts() -> tuple[str, ...]:
    """The texts every tokenizer encodes (``data/probe_texts.json``), read on each call."""
    raw = resources.files("tracker").joinpath("data/probe_texts.json").read_text("utf-8")
    return tuple(json.loads(raw)["texts"])


def parse_tokenizer(data: bytes) -> TokenizerFacts:
    """Load tokenizer.json and encode the probe texts; TokenizerParseError if it will not load.

    A file that makes the worker pass a limit (or crash) will not load either,
    and says so.
    """
    key = content_key(data, *probe_texts())
    facts = _LOADED.get(key)
    if facts is None:
        try:
            facts = default_pool().call(
                summarize_tokenizer,
                data,
                probe_texts(),
                wall_seconds=PARSE_WALL_SECONDS,
                cpu_seconds=round(PARSE_WALL_SECONDS),
            )
        except (LimitExceeded, RemoteError) as exc:
            raise TokenizerParseError(
                f"tokenizers could not load it within limits ({exc})"
            ) from exc
        _LOADED.keep(key, facts)
    if isinstance(facts, str):
        raise TokenizerParseError(f"tokenizers cannot load it: {facts}")
    return facts


def summarize_tokenizer(data: bytes, texts: tuple[str, ...]) -> TokenizerFacts | str:
    """The facts of one tokenizer.json, or why it does not load (runs in the isolated worker)."""
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except MemoryError:  # a limit, not a property of the file: the caller says so
        raise
    except Exception as exc:  # the library raises bare Exception
        return str(exc)
    special = {
        token.content: token_id
        for token_id, token in tokenizer.get_added_tokens_decoder().items()
        if token.special
    }
    encodings = tuple(tuple(tokenizer.encode(text, add_special_tokens=False).ids) for text in texts)
    return TokenizerFacts(tokenizer.get_vocab_size(with_added_tokens=True), special, encodings)


def diff_tokenizers(
    path: str, old: TokenizerFacts | None, new: TokenizerFacts | None
) -> list[Change]:
    """Changes between two tokenizer.json versions (None: absent at that revision)."""
    if old is None and new is None:
        return []
    if old is None or new is None:
        kind = "added" if old is None else "removed"
        return [
            Change(
                ARTIFACT,
                path,
                kind,
                None,
                None,
                Severity.HIGH,
                f"{path} {kind}: the fast tokenizer {'appears' if new else 'is gone'}",
            )
        ]
    changes: list[Change] = []
    if old.vocab_size != new.vocab_size:
        changes.append(
            Change(
                ARTIFACT,
                path,
                "vocab_size",
                old.vocab_size,
                new.vocab_size,
                Severity.HIGH,
                f"{path}: vocabulary size {old.vocab_size} -> {new.vocab_size}",
            )
        )
    changed = _changed_probes(old.encodings, new.encodings)
    if changed:
        first = changed[0]
        text = probe_texts()[first]
        changes.append(
            Change(
                ARTIFACT,
                path,
                "encoding_changed",
                {probe_texts()[i]: list(old.encodings[i]) for i in changed},
                {probe_texts()[i]: list(new.encodings[i]) for i in changed},
                Severity.HIGH,
                f"{path}: {len(changed)} of {len(old.encodings)} probe texts encode to different ids; "
                f"{json.dumps(text)}: {format_value(list(old.encodings[first]), 60)} -> "
                f"{format_value(list(new.encodings[first]), 60)}",
            )
        )
    return changes


def _tokenizer_file(
    kind: str, path: str, old: object, new: object, sides: tuple[Side, Side]
) -> list[Change]:
    if isinstance(old, TokenizerFacts | None) and isinstance(new, TokenizerFacts | None):
        return diff_tokenizers(path, old, new)
    return []  # added_tokens.json: read by the special-token table


_diff_tokenizer_files = per_file(_tokenizer_file)


def diff_tokenizer_kind(kind: str, old: Side | None, new: Side) -> list[Change]:
    """The tokenizer row's differ: tokenizer.json's behaviour, then every added token once."""
    return _diff_tokenizer_files(kind, old, new) + diff_special_tokens(kind, old, new)


def _changed_probes(old: Sequence[tuple[int, ...]], new: Sequence[tuple[int, ...]]) -> list[int]:
    return [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]


__all__ = [
    "TokenizerFacts",
    "TokenizerParseError",
    "diff_tokenizer_kind",
    "diff_tokenizers",
    "parse_tokenizer",
    "probe_texts",
    "summarize_tokenizer",
]
