"""The blob store as one ``prepare`` sees it: one read session, opened only when asked.

``tracker.revision.process.prepare`` reads the previous revision's texts and asks which
content keys the store holds through ``SessionBlobs``, over a ``ReadSession`` that is
opened at the first question and never otherwise: a revision walked after its parent, whose
texts the walk holds or the Hub gave, opens none, and its one transaction is the write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from types import TracebackType

from sqlalchemy.orm import Session

from storage import Database, get_blob, known_content_keys
from storage.records import Snapshot
from tracker.diff.revision import Parsed, RevisionContent
from tracker.revision.snapshot import LazyBlobs
from tracker.revision.stored_builds import SessionSource, session_source


class ReadSession:
    """The one read session of a ``prepare``, opened only when something asks the store.

    A revision walked after its parent often asks the store nothing: the walk holds the
    parent, and its texts are held or, when small, fetched without asking. Such a
    revision opens no session at all; any other opens one at its first question and
    keeps it to the end (``with``), closed (rolled back) when preparing raises.
    """

    def __init__(self, database: Database) -> None:
        self._database = database
        self._stack = ExitStack()
        self._session: Session | None = None

    @property
    def opened(self) -> bool:
        """Whether something asked the store already: asking more costs no session of its own."""
        return self._session is not None

    def __call__(self) -> Session:
        """The session, opened on the first call."""
        if self._session is None:
            self._session = self._stack.enter_context(self._database.read_session())
        return self._session

    def __enter__(self) -> ReadSession:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stack.__exit__(kind, error, traceback)


class SessionBlobs:
    """The blob store seen through one session, as snapshots and differs need it.

    ``fetched`` holds texts read from the Hub for a parent that is not recorded:
    they count as known, so the revision's own snapshot does not fetch them again,
    and they are written with the revision (``Prepared.fetched``). ``kept`` holds
    texts already in the store whose bytes the caller has in hand (the walk's
    previous revision, ``tracker.revision.walk``): they are neither asked for nor read.
    ``stored`` names more keys the caller knows are in the store (every text the walk
    recorded): they are not asked for, only read when a differ needs their bytes.
    ``session`` is a session or, in ``prepare``, its ``ReadSession``: asked for only when
    a key is none of these.
    """

    def __init__(
        self,
        session: Session | SessionSource,
        fetched: Mapping[str, bytes] | None = None,
        kept: Mapping[str, bytes] | None = None,
        stored: Iterable[str] = (),
    ) -> None:
        self._session = session_source(session)
        self._read: dict[str, bytes] = {}
        self._kept: Mapping[str, bytes] = kept or {}
        self.fetched: dict[str, bytes] = dict(fetched or {})
        self.stored: set[str] = set(self._kept) | set(stored)
        """The keys this view saw in the store (kept, known stored, or found there): the
        recording transaction need not ask for them again, since blobs are never deleted."""

    def with_fetched(self, fetched: Mapping[str, bytes]) -> SessionBlobs:
        """This view with ``fetched`` (Hub texts not in the store) added."""
        view = SessionBlobs(self._session, {**self.fetched, **fetched}, self._kept)
        view._read = self._read
        view.stored = self.stored
        return view

    def known(self, keys: Iterable[str], *, fetchable: Iterable[str] = ()) -> set[str]:
        """The keys among ``keys`` and ``fetchable`` already fetched in this revision or stored
        in the blob table. ``fetchable`` keys are asked about only with others or in a read
        session already open: otherwise they are left unknown, to be fetched, and ``prepare``
        opens no read session for them (``tracker.revision.snapshot.ASK_ABOVE``)."""
        wanted, optional = set(keys), set(fetchable)
        seen = {k for k in wanted | optional if k in self.fetched or k in self.stored}
        asked = wanted - seen
        if asked or self._session_open():
            asked |= optional - seen
        if not asked:
            return seen
        found = known_content_keys(self._session(), asked)
        self.stored |= found
        return seen | found

    def _session_open(self) -> bool:
        """Whether asking the store costs no session of its own: a session in hand, or the
        read session opened already."""
        return not isinstance(self._session, ReadSession) or self._session.opened

    def read(self, key: str) -> bytes:
        """The blob at ``key``, read from the store at most once through this view."""
        if key in self.fetched:
            return self.fetched[key]
        if key in self._kept:
            return self._kept[key]
        if key not in self._read:
            self._read[key] = get_blob(self._session(), key)
        return self._read[key]

    def in_hand(self) -> dict[str, bytes]:
        """Every text this view holds the bytes of: kept, read or fetched."""
        return {**self._kept, **self._read, **self.fetched}


def content_of(
    snapshot: Snapshot, blobs: SessionBlobs, cache: dict[tuple[str, str], Parsed]
) -> RevisionContent:
    """A recorded snapshot as the differs see it, its texts read from the blob store on demand."""
    return RevisionContent(snapshot, LazyBlobs(snapshot.texts, blobs.read), cache)


__all__ = ["ReadSession", "SessionBlobs", "content_of"]
