"""Upstream text holding NUL is recorded on both backends, the NUL shown as U+FFFD.

PostgreSQL cannot store NUL in text or JSONB; a hostile file quoted in an
advisory must still publish, the same way on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime

from storage import Database, ensure_repo, put_advisory
from storage.publishing import advisory_by_id
from storage.records import Advisory, Severity
from storage.values import storable_text

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
