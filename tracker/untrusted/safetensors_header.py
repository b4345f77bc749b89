"""A safetensors header read within bounds, wherever the file lies (the Hub, a local directory).

The format (the safetensors README, "Format") is an 8-byte little-endian
length, then that many bytes of JSON, then the tensor data. The
length is checked against a cap before a byte of the JSON is read, so a file
that declares a huge header costs 8 bytes; the JSON goes through the bounded
reader (``tracker.untrusted.json_input``) like every other upstream document.
Only the reading is the caller's: ``read(offset, length)`` returns those bytes,
fewer only where the file ends.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from tracker.errors import HeaderInvalid, HeaderTooLarge
from tracker.untrusted.json_input import JsonInputError, read_json

MAX_HEADER_BYTES = 100 * 1024 * 1024
"""Largest safetensors header read; the Hub's own client stops at 25 MB."""
PREFIX = 8
"""The length field: an unsigned 64-bit little-endian integer."""

Read = Callable[[int, int], bytes]
"""``read(offset, length)``: that many bytes from ``offset``, fewer only at the end of the file."""


def read_header(
    read: Read,
    where: str,
    *,
    size: int = 0,
    limit: int = MAX_HEADER_BYTES,
    first_read: int = PREFIX,
) -> dict[str, Any]:
    """The header JSON of the file ``read`` reads; ``size`` 0 when the file's size is unknown.

    ``first_read`` bytes are asked for first: more than the length field saves a
    second read when the header fits in them (huggingface_hub asks for 100,000).
    """
    head = read(0, max(first_read, PREFIX))
    if len(head) < PREFIX:
        raise HeaderInvalid(f"{where}: file is shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", head[:PREFIX])
    if length > limit:
        raise HeaderTooLarge(
            f"{where}: header declares {length:,} bytes, over the limit of {limit:,}; not read"
        )
    if size and PREFIX + length > size:
        raise HeaderInvalid(f"{where}: header declares {length:,} bytes but the file has {size:,}")
    raw = head[PREFIX : PREFIX + length]
    if len(raw) < length:
        raw += read(len(head), length - len(raw))
    if len(raw) != length:
        raise HeaderInvalid(f"{where}: header declares {length:,} bytes but {len(raw):,} follow")
    try:
        header = read_json(raw)
    except JsonInputError as exc:
        raise HeaderInvalid(f"{where}: header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise HeaderInvalid(f"{where}: header is not a JSON object")
    return header


__all__ = ["MAX_HEADER_BYTES", "Read", "read_header"]
