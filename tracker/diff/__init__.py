"""Semantic differs, one module per artifact kind, and the revision-level diff.

``tracker.diff.revision.diff_revisions`` runs them all; each differ is a pure
function over parsed artifacts returning ``storage.records.Change`` values.
Import the modules directly: this package re-exports nothing, so the
artifact table and the differs can import each other's leaves without cycles.
"""

__all__: list[str] = []
