"""Upstream text holding NUL is recorded on both backends, the NUL shown as U+FFFD.

PostgreSQL cannot store NUL in text or JSONB; a hostile file quoted in an
advisory must still publish, the same way on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from storage import Database, ensure_repo, put_advisory
from storage.errors import InvalidRecord
from storage.publishing import advisory_by_id
from storage.records import Advisory, Severity
from storage.values import require_text, storable_text

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def test_storable_text_replaces_nul_in_strings_keys_and_nested_values() -> None:
    value = {"a\x00": ["x\x00y", {"k": "\x00"}], "n": 1, "t": ("\x00",)}
    assert storable_text(value) == {
        "a\ufffd": ["x\ufffdy", {"k": "\ufffd"}],
        "n": 1,
        "t": ["\ufffd"],
    }


def test_an_advisory_quoting_a_nul_is_stored_with_the_replacement_character(
    database: Database,
) -> None:
    advisory = Advisory(
        id="x_NEURARCH-ACME-MODEL-0123456789ab",
        repo_id="acme/model",
        old_sha="a" * 40,
        new_sha="b" * 40,
        published=NOW,
        modified=NOW,
        summary="chat template renders \x00 now",
        severity=Severity.HIGH,
        osv={"details": "- `chat_template.jinja` \x00", "database_specific": {"k\x00": "v"}},
    )
    with database.session() as session:
        ensure_repo(session, "acme/model", now=NOW)
        assert put_advisory(session, advisory)
    with database.read_session() as session:
        stored = advisory_by_id(session, advisory.id)
    assert stored is not None
    assert stored.summary == "chat template renders \ufffd now"
    assert stored.osv["details"] == "- `chat_template.jinja` \ufffd"
    assert stored.osv["database_specific"] == {"k\ufffd": "v"}


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (
            {"plan": {"structure": [{"name": "layers.0"}, {"name": "a\x00"}]}},
            ".plan.structure[1].name",
        ),
        ({"k\x00": 1}, ""),
        ({"config.json": "{}", "chat_template.jinja": "{{ x }}\x00"}, ".chat_template.jinja"),
        (["a", "b\x00"], "[1]"),
        ([("ok", {"deep": [[["\x00"]]]})], "[0][1].deep[0][0][0]"),
    ],
)
def test_require_text_names_where_a_nul_sits_at_any_depth(value: object, where: str) -> None:
    with pytest.raises(InvalidRecord) as refused:
        require_text(value, "r")
    assert str(refused.value).startswith(f"r{where}: text contains a NUL")


def test_text_that_spells_an_escaped_nul_is_not_one() -> None:
    # Six characters, backslash u 0 0 0 0: json encodes the backslash, and the walk finds no NUL.
    require_text({"template": "{{ '\\u0000' }}", "keys": {"\\u0000": ["\\\\u0000"]}}, "r")
