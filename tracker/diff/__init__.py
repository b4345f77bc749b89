"""Semantic differs, one module per artifact kind, the artifact table and the revision diff.

``tracker.diff.registry.ARTIFACTS`` is the table: one row per kind, naming
its files, parsers and differ. ``tracker.diff.revision.diff_revisions`` runs
every row; each differ is a pure function over parsed artifacts returning
``storage.records.Change`` values. The shapes of a row live in
``tracker.untrusted.artifacts``, which imports nothing from here (the arrow points one
way). Import the modules directly: this package re-exports nothing.
"""

__all__: list[str] = []
