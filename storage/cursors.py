"""Keyset page cursors over (published desc, id): what OSV's ``next_page_token`` carries.

A cursor is the (published, id) of a page's last advisory, base64url
encoded. The next page is every advisory after it in that order, so a page
never shifts when a newer advisory lands between two requests, as an offset
would.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

from sqlalchemy import and_, or_

from storage.errors import InvalidRecord
from storage.models import AdvisoryRow


class InvalidCursor(InvalidRecord):
    """A page cursor that storage did not hand out."""


def encode_cursor(published: datetime, advisory_id: str) -> str:
    """The cursor of the page that follows the advisory (published, id)."""
    raw = f"{published.isoformat()}|{advisory_id}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (published, id) a cursor carries; InvalidCursor for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
        stamp, advisory_id = raw.split("|", 1)
        published = datetime.fromisoformat(stamp)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidCursor(f"invalid cursor {cursor[:40]!r}") from None
    if published.tzinfo is None:
        raise InvalidCursor(f"invalid cursor {cursor[:40]!r}")
    return published, advisory_id


def after_cursor(cursor: str) -> tuple[Any, ...]:
    """The WHERE conditions of the advisories that follow ``cursor``.

    The redundant ``published <= last`` bound lets the page start with an
    index range scan; the OR alone would not.
    """
    published, last_id = decode_cursor(cursor)
    return (
        AdvisoryRow.published <= published,
        or_(
            AdvisoryRow.published < published,
            and_(AdvisoryRow.published == published, AdvisoryRow.id > last_id),
        ),
    )


__all__ = ["InvalidCursor", "after_cursor", "decode_cursor", "encode_cursor"]
