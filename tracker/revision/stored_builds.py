"""Meta-device builds kept in the blob store, so a deployment builds each config once.

A build of a type no family knows costs a noticeable fraction of a second; kept
only in the process that made it, it would be made again by every worker and after
every restart. Here the build of one (config, transformers
version) is a blob under a key of its own, read back in the revision's read
session and written in the revision's own transaction (``tracker.revision.process``), so
a crash between the two loses nothing but the build.

The key is ``m`` and 63 hex digits of SHA-256 over the canonical config and the
transformers version: the Hub's content keys (git blob ids, LFS sha256) are hex
only, so no file a repo uploads can sit under it, and the stored document
repeats its key, which is checked on read. A stored document that does not
decode is rebuilt, not trusted. A new transformers release may build a class
differently; its version is part of the key, so its builds are made afresh.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final

from sqlalchemy.orm import Session

from estimator.families.exact import ParameterList
from storage import BlobCorrupt, BlobNotFound, get_blob
from tracker.revision.exact_parameters import MetaBuild, cached, config_hash, meta_build, remember

KEY_PREFIX: Final = "m"
FORMAT: Final = 1

SessionSource = Callable[[], Session]
"""Gives the session to read through, opening it on first use (``session_blobs.ReadSession``)."""


def session_source(session: Session | SessionSource) -> SessionSource:
    """``session`` as a source: a session in hand is given as it is."""
    if isinstance(session, Session):
        return lambda: session
    return session


@lru_cache(maxsize=1)
def transformers_version() -> str:
    """The installed transformers' version, read without importing it."""
    return importlib.metadata.version("transformers")


def build_key(config: Mapping[str, object]) -> str:
    """The blob key of ``config``'s build under the installed transformers."""
    return _blob_key(config_hash(config))


def _blob_key(digest: str) -> str:
    material = f"{digest}\0{transformers_version()}".encode()
    return KEY_PREFIX + hashlib.sha256(material).hexdigest()[:63]


def encode(build: MetaBuild, key: str) -> bytes:
    """The stored document: parameters, module tree and refusal, with its own key."""
    document = {
        "format": FORMAT,
        "key": key,
        "parameters": [[name, list(shape)] for name, shape in build.parameters],
        "modules": [list(module) for module in build.modules],
        "refused": build.refused,
    }
    return json.dumps(document, separators=(",", ":")).encode()


def decode(data: bytes, key: str) -> MetaBuild | None:
    """The build in ``data`` if it is a well-formed document of ``key``, else None."""
    try:
        document = json.loads(data)
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    if document.get("key") != key:
        return None
    parameters = _parameters(document.get("parameters"))
    modules = _modules(document.get("modules"))
    refused = document.get("refused")
    if parameters is None or modules is None or not isinstance(refused, str | None):
        return None
    return MetaBuild(parameters, modules, refused)


def _parameters(value: Any) -> ParameterList | None:
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            return None
        shape = item[1]
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            return None
        out.append((item[0], tuple(shape)))
    return tuple(out)


def _modules(value: Any) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(value, list):
        return None
    if not all(
        isinstance(m, list) and len(m) == 2 and all(isinstance(s, str) for s in m) for m in value
    ):
        return None
    return tuple((m[0], m[1]) for m in value)


class StoredBuilds:
    """The ExactParameters of one revision's read session.

    A config this process holds a build of is answered from memory, without asking for
    the session; any other is read from the blob store, or, met for the first time, built
    and its document kept in ``new`` for the revision's transaction to write.
    """

    def __init__(self, session: Session | SessionSource) -> None:
        self.session = session_source(session)
        self.new: dict[str, bytes] = {}

    def __call__(self, config: Mapping[str, object]) -> ParameterList | None:
        """The exact parameter list of ``config``, None when the build has none (the estimator's hook)."""
        return self.build(config).parameters or None

    def build(self, config: Mapping[str, object]) -> MetaBuild:
        """The meta-device build of ``config``: this process's copy, the stored one, else made and kept."""
        # A build this process holds was read from the store or made and written by it: a
        # repo's every revision of one config reads the store once per process, not each time.
        digest = config_hash(config)
        hit = cached(digest)
        if hit is not None:
            return hit
        key = _blob_key(digest)
        stored = self._stored(key)
        if stored is not None:
            remember(digest, stored)
            return stored
        built = meta_build(config)
        self.new[key] = encode(built, key)
        return built

    def _stored(self, key: str) -> MetaBuild | None:
        try:
            data = get_blob(self.session(), key)
        except (BlobNotFound, BlobCorrupt):
            return None
        return decode(data, key)


__all__ = [
    "SessionSource",
    "StoredBuilds",
    "build_key",
    "decode",
    "encode",
    "session_source",
    "transformers_version",
]
