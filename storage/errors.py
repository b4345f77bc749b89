"""The storage error tree: what can go wrong between us and the database.

::

    StorageError
    ├── DatabaseURLError        the URL names no database we can open
    ├── DatabaseUnavailable     the server (or the SQLite file) cannot be reached
    ├── SchemaError             the schema is missing, old, or a migration failed
    ├── IntegrityConflict       a write broke a constraint (duplicate, dangling reference)
    ├── BlobTooLarge            a blob is over the store's size limit; nothing was written
    ├── BlobCorrupt             stored bytes do not decompress to their recorded size
    ├── LeaseNotHeld            a fenced write found its lease expired or taken over; nothing written
    ├── InvalidRecord           a record cannot be stored as given (naive datetime, NUL in text)
    │   ├── InvalidRepoId       a repo id the Hub would reject (storage.repo_ids); ValueError
    │   └── InvalidCursor       a page cursor storage did not hand out (storage.publishing)
    └── NotFound
        ├── RepoNotFound
        ├── RevisionNotFound
        └── BlobNotFound

Classes without a module named are defined here. Messages name the thing and
what to do about it, and never carry a password: the CLI prints them as one line.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base of every error raised by ``storage``."""


class DatabaseURLError(StorageError):
    """The database URL is malformed or names an unsupported backend."""


class DatabaseUnavailable(StorageError):
    """The database server could not be reached, or the SQLite file could not be opened."""


class SchemaError(StorageError):
    """The database schema is missing or out of date, or a migration failed."""


class IntegrityConflict(StorageError):
    """A write violated a constraint of the schema."""


class BlobTooLarge(StorageError):
    """A blob is larger than the store accepts."""


class BlobCorrupt(StorageError):
    """A stored blob does not decompress to the size recorded beside it."""


class LeaseNotHeld(StorageError):
    """The lease a write was fenced by (``storage.polling.LeaseFence``) is no longer its
    owner's: the write is abandoned, so the repo's new holder records the revision once."""


class InvalidRecord(StorageError):
    """A record holds a value the database cannot store faithfully."""


class NotFound(StorageError):
    """Something asked for is not in the database."""


class RepoNotFound(NotFound):
    """The repo is not tracked."""


class RevisionNotFound(NotFound):
    """The repo has no recorded revision with that sha."""


class BlobNotFound(NotFound):
    """No blob is stored under that content key."""
