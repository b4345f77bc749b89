"""How a webhook alert is signed, so a receiver can tell it came from us and is fresh.

The scheme (the one Stripe and GitHub receivers already know the shape of)::

    X-Neurarch-Timestamp: 1735689600                      unix seconds when it was sent
    X-Neurarch-Signature: sha256=<hex HMAC-SHA256(secret, b"1735689600." + body)>

The timestamp is inside the signed bytes, so an eavesdropper cannot replay an
old body under a new timestamp, and a receiver that rejects timestamps older
than a few minutes rejects replays altogether. Production only signs;
``verify`` is the reference a receiver's code is checked against (the README
shows the same check in plain standard-library Python).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Final

TIMESTAMP_HEADER: Final = "X-Neurarch-Timestamp"
SIGNATURE_HEADER: Final = "X-Neurarch-Signature"
PREFIX: Final = "sha256="
DEFAULT_TOLERANCE_S: Final = 300

__all__ = [
    "DEFAULT_TOLERANCE_S",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "sign",
    "signature_headers",
    "verify",
]


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=`` + the hex HMAC-SHA256 of ``b"<timestamp>." + body`` under ``secret``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return PREFIX + mac.hexdigest()


def signature_headers(secret: str, body: bytes, now: datetime) -> dict[str, str]:
    """The two headers that sign ``body`` as sent at ``now``."""
    timestamp = int(now.timestamp())
    return {
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }


def verify(
    secret: str,
    timestamp_header: str | None,
    signature_header: str | None,
    body: bytes,
    now: datetime,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
) -> bool:
    """True if the headers sign ``body`` under ``secret`` within ``tolerance_s`` of ``now``.

    The comparison is constant-time (``hmac.compare_digest``), so a forger
    learns nothing from how long a rejection takes.
    """
    if not timestamp_header or not timestamp_header.isascii() or not timestamp_header.isdigit():
        return False
    if signature_header is None:
        return False
    timestamp = int(timestamp_header)
    if abs(now.timestamp() - timestamp) > tolerance_s:
        return False
    expected = sign(secret, timestamp, body)
    return hmac.compare_digest(signature_header.encode(), expected.encode())
