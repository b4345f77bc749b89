"""What a worker keeps in hand while it walks one repo's history, oldest revision first.

Each revision is diffed against its parent, which is (almost always) the revision the
same worker recorded a moment before. Its snapshot was recorded by the same worker, its
texts were fetched or read for that revision, and parsed; its plan was computed from its
config.json and manifest. Kept here, the next revision asks the store nothing about them
(not the snapshot, not the stored plan, not whether its texts are stored, not even whether
the revision itself is recorded: the recording's first statement answers that), parses
nothing twice and plans only when the inputs of the plan changed. Only the last recorded
revision's texts are kept, so a walk holds one revision's texts however long the history;
the content keys of every text it recorded are kept too (a key is 64 characters), so a
text that comes back later in the walk (a revert) counts as stored and is not fetched again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from estimator import Plan
from storage.records import Revision, Snapshot
from storage.storable import JsonDocument
from tracker.untrusted.artifacts import Parsed


@dataclass(frozen=True)
class Planned:
    """A plan as this process computed it, with the inputs it was computed from."""

    sha: str
    config_key: str
    manifest: Mapping[str, Any] | None
    plan: Plan
    document: JsonDocument
    """The plan's JSON as it was stored: a revision whose plan this is stores it again as is."""


@dataclass
class Walk:
    """The state one repo's walk carries from a revision to the next."""

    parsed: dict[tuple[str, str], Parsed] = field(default_factory=dict)
    """Parsed artifacts by (kind, content key)."""
    texts: dict[str, bytes] = field(default_factory=dict)
    """The bytes of the last recorded revision's texts that were in hand, by content key."""
    planned: Planned | None = None
    """The last recorded revision's plan, when this process computed it."""
    repo_pk: int | None = None
    """The repo's key in storage, once a revision of the walk has looked it up."""
    snapshot: Snapshot | None = None
    """The last recorded revision's snapshot, as this process recorded it."""
    recorded_keys: set[str] = field(default_factory=set)
    """The content keys of every text this walk recorded: all in the store."""

    def recorded(
        self, snapshot: Snapshot, in_hand: Mapping[str, bytes], planned: Planned | None
    ) -> None:
        """Keep what a revision just recorded had in hand: its snapshot, the bytes of its
        texts (``in_hand``, by content key) and its plan."""
        self.texts = {key: in_hand[key] for key in snapshot.texts.values() if key in in_hand}
        self.planned = planned
        self.snapshot = snapshot
        self.recorded_keys.update(snapshot.texts.values())

    def stored(self) -> frozenset[str]:
        """The content keys of the texts of every revision this walk recorded: all in the
        store, whether or not their bytes are kept (a text found stored and parsed from the
        cache was never read)."""
        return frozenset(self.recorded_keys)

    def parent_of(self, revision: Revision) -> Snapshot | None:
        """The snapshot of ``revision``'s parent on main, when it is the one recorded last."""
        held = self.snapshot
        if held is None or revision.parents[:1] != (held.revision.sha,):
            return None
        return held


__all__ = ["Planned", "Walk"]
