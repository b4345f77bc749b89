"""SQLAlchemy models, sessions, queries and migrations; the shared history records."""

from storage.records import Advisory, Change, FileEntry, Revision, Severity, Snapshot

__all__ = ["Advisory", "Change", "FileEntry", "Revision", "Severity", "Snapshot"]
