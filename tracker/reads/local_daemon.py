"""Ask a ``serve`` daemon on this machine for a command's document, over loopback HTTP.

Importing SQLAlchemy and the storage models takes longer than a reading command may
(see tracker/README.md, Reading commands), while a running daemon has them loaded and
the database open. So ``history`` and ``diff`` first ask the daemon at the configured
``[server]`` address, with the standard library only, and read storage themselves when
no daemon answers: nothing listens there, the address is not this machine, the daemon
serves another database (it compares a digest of the database URL) or is of a version
without the read. An answer is the same document the command would have built
(``tracker.reads.documents``), so both ways print the same bytes.
"""

from __future__ import annotations

import hashlib
import http.client
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from tracker.errors import UsageError
from tracker.settings import Settings

PATH = "/api/v1/cli/"
"""Where the daemon answers reads: ``PATH + name``, parameters in the query string."""

DATABASE_HEADER = "X-Neurarch-Database"
"""The digest of the database URL the asking command would read."""

CONNECT_TIMEOUT_S = 1.0
"""A daemon that has not accepted the connection by then is treated as absent."""

ANSWER_TIMEOUT_S = 30.0
"""How long an accepted request may take: a recomputed diff (the daemon's first imports the
differs) can take seconds on a loaded machine, and reading storage here instead would
only do the same work again; a daemon silent that long is treated as absent."""

LOCAL_HOSTS = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}
LOCAL_HOSTS |= {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
"""Bind addresses whose daemon is reachable on loopback, and the address to connect to."""


def database_digest(database_url: str) -> str:
    """Names the database without the URL itself (which may hold a password)."""
    return hashlib.sha256(database_url.encode()).hexdigest()[:32]


def ask(settings: Settings, name: str, params: Mapping[str, str]) -> Any | None:
    """The daemon's document for read ``name``, or None when no daemon here answers for it.

    A refusal the daemon answers (422: an unknown repo, a revision no sha matches, a
    reversed diff) is raised as the UsageError the command would raise itself.
    """
    address = LOCAL_HOSTS.get(settings.daemon.host)
    if address is None:
        return None
    headers = {DATABASE_HEADER: database_digest(settings.storage.database_url)}
    connection = http.client.HTTPConnection(
        address, settings.daemon.port, timeout=CONNECT_TIMEOUT_S
    )
    try:
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(ANSWER_TIMEOUT_S)
        connection.request("GET", PATH + quote(name) + "?" + urlencode(params), headers=headers)
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    media_type = response.getheader("content-type") or ""
    if response.status not in (200, 422) or not media_type.startswith("application/json"):
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if response.status == 422:
        if not isinstance(document, dict) or not isinstance(document.get("error"), str):
            return None
        raise UsageError(document["error"])
    return document


__all__ = ["DATABASE_HEADER", "PATH", "ask", "database_digest"]
