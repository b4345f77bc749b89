"""A safetensors header is framed one way, wherever its bytes come from.

``tracker.untrusted.safetensors_header.read_header`` over an in-memory file:
the header comes back as written, the reads it makes are the ones the
format needs, and a header outside the caps or the format is refused before
its JSON is read.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracker.errors import HeaderInvalid, HeaderTooLarge
from tracker.untrusted.safetensors_header import read_header


class File:
    """Bytes read by ``(offset, length)``, remembering every read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads: list[tuple[int, int]] = []

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self.data[offset : offset + length]


def safetensors(header: dict[str, Any], body: bytes = b"\0" * 16) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


tensors = st.dictionaries(
    st.text(min_size=1, max_size=12),
    st.fixed_dictionaries(
        {
            "dtype": st.sampled_from(["BF16", "F32", "I8"]),
            "shape": st.lists(st.integers(0, 4096), max_size=3),
            "data_offsets": st.tuples(st.integers(0, 99), st.integers(100, 200)).map(list),
        }
    ),
    max_size=8,
)


@given(header=tensors, first_read=st.integers(0, 400))
def test_a_header_reads_back_as_written_in_one_or_two_reads(
    header: dict[str, Any], first_read: int
) -> None:
    data = safetensors(header)
    file = File(data)
    assert read_header(file.read, "m", size=len(data), first_read=first_read) == header
    length = len(data) - 8 - 16
    head = max(first_read, 8)
    if head >= 8 + length:
        assert file.reads == [(0, head)]
    else:
        assert file.reads == [(0, head), (head, 8 + length - head)]


def test_a_header_over_the_cap_costs_only_its_length_field() -> None:
    file = File(safetensors({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}))
    with pytest.raises(HeaderTooLarge, match="over the limit of 10; not read"):
        read_header(file.read, "m", limit=10)
    assert file.reads == [(0, 8)]


@pytest.mark.parametrize(
    ("data", "size", "message"),
    [
        (b"\x01\x00", 2, "shorter than the 8-byte header length"),
        (struct.pack("<Q", 1000) + b"{}", 10, "declares 1,000 bytes but the file has 10"),
        (struct.pack("<Q", 1000) + b"{}", 0, "declares 1,000 bytes but 2 follow"),
        (struct.pack("<Q", 2) + b"[]", 10, "header is not a JSON object"),
        (struct.pack("<Q", 2) + b"{,", 10, "header is not JSON"),
    ],
)
def test_a_header_outside_the_format_is_refused(data: bytes, size: int, message: str) -> None:
    with pytest.raises(HeaderInvalid, match=message):
        read_header(File(data).read, "m", size=size)
