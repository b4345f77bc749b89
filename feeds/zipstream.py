"""A ZIP archive written as a stream of chunks, in memory that does not grow with its entries.

A ZIP ends with a central directory: one record (46 bytes plus the name)
per entry, about 100 MB for a million advisories. Writers that keep it in
memory therefore grow with the archive; this one spools the records to a
temporary file (in memory up to ``SPOOL_BYTES``, on disk past it) and
copies them out at the end. Each member is small and already in memory (one
OSV document), so it is deflated whole and its CRC and sizes go in the local
header: no data descriptors. ZIP64 records are added only where a count or
an offset overflows the classic fields (APPNOTE.TXT 6.3.10, sections 4.3.14
to 4.3.16, 4.5.3), which Python's zipfile and Info-ZIP read.

Kept by hand because no library covers this: stream-zip and zipstream-ng
both hold the central directory in memory (331 and 600 bytes per entry
traced, a few hundred MB at a million advisories, against the dump's
200 MB goal), and zipstream-ng holds each member's data until it writes.
"""

from __future__ import annotations

import struct
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from datetime import datetime

SPOOL_BYTES = 4 * 1024 * 1024
CHUNK_BYTES = 256 * 1024

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_END = struct.Struct("<4s4H2LH")
_ZIP64_OFFSET = struct.Struct("<2HQ")
_MAX16, _MAX32 = 0xFFFF, 0xFFFFFFFF
_DEFLATED, _UTF8_NAMES = 8, 0x800
_VERSION, _VERSION64 = 20, 45


def stream_zip(
    members: Iterable[tuple[str, datetime, bytes]], *, spool_bytes: int = SPOOL_BYTES
) -> Iterator[bytes]:
    """The archive of ``members`` (name, modification time, content) as chunks of bytes.

    Chunks are about ``CHUNK_BYTES`` each; the central directory stays in
    memory up to ``spool_bytes`` and goes to a temporary file past it.
    """
    offset = 0
    count = 0
    pending = bytearray()
    with tempfile.SpooledTemporaryFile(max_size=spool_bytes) as directory:
        for name, moment, content in members:
            local, record = _member(name.encode(), moment, content, offset)
            pending += local
            offset += len(local)
            directory.write(record)
            count += 1
            if len(pending) >= CHUNK_BYTES:
                yield bytes(pending)
                pending.clear()
        start, size = offset, directory.tell()
        directory.seek(0)
        while block := directory.read(CHUNK_BYTES - len(pending)):
            pending += block
            if len(pending) >= CHUNK_BYTES:
                yield bytes(pending)
                pending.clear()
    pending += _end(count, start, size)
    yield bytes(pending)


def _member(name: bytes, moment: datetime, content: bytes, offset: int) -> tuple[bytes, bytes]:
    """(local header + deflated data, central directory record) of one member."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = compressor.compress(content) + compressor.flush()
    crc = zlib.crc32(content)
    time, date = _dos_time(moment)
    shared = (_DEFLATED, time, date, crc, len(data), len(content), len(name))
    local = _LOCAL.pack(b"PK\x03\x04", _VERSION, _UTF8_NAMES, *shared, 0) + name + data
    extra = b"" if offset < _MAX32 else _ZIP64_OFFSET.pack(1, 8, offset)
    version = _VERSION64 if extra else _VERSION
    record = _CENTRAL.pack(
        b"PK\x01\x02",
        version,
        version,
        _UTF8_NAMES,
        *shared,
        len(extra),
        0,  # comment length
        0,  # disk number
        0,  # internal attributes
        0o644 << 16,  # external attributes: a regular file, rw-r--r--
        min(offset, _MAX32),
    )
    return local, record + name + extra


def _end(count: int, start: int, size: int) -> bytes:
    """The end of central directory record, preceded by its ZIP64 pair when a field overflows."""
    tail = b""
    if count >= _MAX16 or start >= _MAX32 or size >= _MAX32:
        zip64_at = start + size
        tail = _ZIP64_END.pack(
            b"PK\x06\x06",
            _ZIP64_END.size - 12,
            _VERSION64,
            _VERSION64,
            0,
            0,
            count,
            count,
            size,
            start,
        )
        tail += _ZIP64_LOCATOR.pack(b"PK\x06\x07", 0, zip64_at, 1)
    entries = min(count, _MAX16)
    return tail + _END.pack(
        b"PK\x05\x06", 0, 0, entries, entries, min(size, _MAX32), min(start, _MAX32), 0
    )


def _dos_time(moment: datetime) -> tuple[int, int]:
    """The MS-DOS (time, date) of ``moment``; years before 1980, which DOS cannot say, as 1980."""
    time = (moment.hour << 11) | (moment.minute << 5) | (moment.second // 2)
    date = ((max(moment.year, 1980) - 1980) << 9) | (moment.month << 5) | moment.day
    return time, date


__all__ = ["CHUNK_BYTES", "SPOOL_BYTES", "stream_zip"]
