"""Model card changes: licence, gating and base model, from README front matter and the API.

The card is a small JSON object (``license``, ``base_model``, ``gated``,
``extra_gated_*``), so it is diffed by the JSON differ under the ``card``
rules of the field table; what is card-specific is reading the front matter.
The card compared is the snapshot's (front matter, plus ``gated`` from the
Hub API), not README.md's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from storage.records import Change
from tracker.diff.json_diff import diff_json
from tracker.diff.remote_code import CARD_KEY as REMOTE_CODE_KEY
from tracker.errors import FrontMatterError
from tracker.untrusted.artifacts import Side

ARTIFACT = "card"
CARD_FIELDS = ("license", "license_name", "license_link", "base_model", "extra_gated_prompt")


def parse_front_matter(data: bytes) -> dict[str, Any]:
    """The card fields of README.md's ``---`` YAML block (safe_load: plain data only)."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        raise FrontMatterError("front matter opens with '---' but never closes")
    try:
        document = yaml.safe_load(text[3:end])
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front matter is not valid YAML: {exc}") from exc
    except RecursionError:  # flow collections nested thousands deep
        raise FrontMatterError("front matter is nested too deeply to read") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise FrontMatterError("front matter is not a mapping")
    return {k: _plain(document[k]) for k in CARD_FIELDS if k in document}


def _plain(value: Any) -> Any:
    """YAML dates and other non-JSON scalars as strings, so the card stays JSON."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def diff_cards(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Licence, gating and base-model changes between two revisions' cards."""
    if not old:
        return []
    return diff_json(ARTIFACT, "README.md", dict(old), dict(new))


def diff_card_view(kind: str, old: Side | None, new: Side) -> list[Change]:
    """The card row's differ: the snapshots' cards (front matter plus the API's gating)."""
    if old is None:
        return []
    return diff_cards(_front_matter(old.snapshot.card), _front_matter(new.snapshot.card))


def _front_matter(card: Mapping[str, Any]) -> dict[str, Any]:
    """The card without what the snapshot keeps beside it for another row (remote code)."""
    return {k: v for k, v in card.items() if k != REMOTE_CODE_KEY}


__all__ = ["FrontMatterError", "diff_card_view", "diff_cards", "parse_front_matter"]
