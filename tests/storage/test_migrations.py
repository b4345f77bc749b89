"""Migrations: upgrading an empty database yields exactly the models; downgrade undoes it."""

from __future__ import annotations

import json

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from storage import (
    channel_key,
    ensure_repo,
    open_database,
    plan_at,
    record_revision,
    revisions,
    subscriptions_naming,
)
from storage.migrations import head_revision
from storage.models import Base
from tests.storage.builders import BASE_DATE, revision, snapshot

MODEL_TABLES = set(Base.metadata.tables)


def _diffs(url: str) -> list[object]:
    db = open_database(url)
    try:
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        db.close()


def test_upgrade_from_empty_equals_the_models(database_url: str) -> None:
    db = open_database(database_url)
    try:
        assert db.schema_revision() is None
        db.migrate()
        assert db.schema_revision() == head_revision()
        assert set(inspect(db.engine).get_table_names()) == MODEL_TABLES | {"alembic_version"}
    finally:
        db.close()
    assert _diffs(database_url) == []


def test_downgrade_to_base_leaves_no_tables_and_upgrade_works_again(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate()
        db.downgrade("base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        assert db.schema_revision() is None
        db.migrate()
        assert db.schema_revision() == head_revision()
    finally:
        db.close()
    assert _diffs(database_url) == []


def test_migrating_twice_is_harmless(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate()
        db.migrate()
        assert db.schema_revision() == head_revision()
    finally:
        db.close()


def test_0003_gives_advisories_stored_before_it_their_repos_org(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate("0002")
        with db.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO repos (id, repo_id, added_at, status, tracked, options)"
                    " VALUES (7, 'mistralai/Mistral-7B-v0.1', :at, 'active', true, '{}')"
                ),
                {"at": BASE_DATE},
            )
            connection.execute(
                text(
                    "INSERT INTO advisories (id, repo_pk, new_sha, published, modified,"
                    " summary, severity, osv) VALUES ('NAT-1', 7, :sha, :at, :at, 's', 2, '{}')"
                ),
                {"sha": "a" * 40, "at": BASE_DATE},
            )
        db.migrate()
        with db.engine.connect() as connection:
            orgs = connection.execute(text("SELECT id, org FROM advisories")).all()
    finally:
        db.close()
    assert [tuple(row) for row in orgs] == [("NAT-1", "mistralai")]


def test_0004_places_revisions_stored_before_it_in_the_order_they_were_recorded(
    database_url: str,
) -> None:
    db = open_database(database_url)
    try:
        db.migrate("0003")
        with db.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO repos (id, repo_id, added_at, status, tracked, options)"
                    " VALUES (7, 'acme/model', :at, 'active', true, '{}')"
                ),
                {"at": BASE_DATE},
            )
            # recorded oldest first along the chain; the second carries a pusher's far date
            for row_id, sha, year in ((3, "a", 2025), (5, "b", 9999), (9, "c", 2026)):
                connection.execute(
                    text(
                        "INSERT INTO revisions (id, repo_pk, sha, parents, date, title,"
                        " processed_at, on_main) VALUES (:id, 7, :sha, '[]', :date, 't', :at, true)"
                    ),
                    {
                        "id": row_id,
                        "sha": sha * 40,
                        "date": BASE_DATE.replace(year=year),
                        "at": BASE_DATE,
                    },
                )
        db.migrate()
        with db.read_session() as session:
            listed = [r.sha[0] for r in revisions(session, "acme/model")]
    finally:
        db.close()
    assert listed == ["c", "b", "a"]


def test_0005_names_queued_alerts_by_their_channel_not_its_position(database_url: str) -> None:
    hooks = [
        {"type": "webhook", "url": "https://a.example/hook", "secret": "s"},
        {"type": "apprise", "url": "json://b.example/inbox"},
    ]
    db = open_database(database_url)
    try:
        db.migrate("0003")
        with db.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO subscriptions (id, name, repo_patterns, spec, channels,"
                    " min_severity, created_at, active, next_sequence)"
                    " VALUES (3, 'team', '[\"org/*\"]', '{}', :channels, 0, :at, true, 5)"
                ),
                {"channels": json.dumps(hooks), "at": BASE_DATE},
            )
            for sequence, label in enumerate(["feed", "webhook:0", "apprise:1", "webhook:4"]):
                connection.execute(
                    text(
                        "INSERT INTO deliveries (subscription_pk, sequence, channel, event_key,"
                        " payload, status, attempts, next_attempt_at, created_at)"
                        " VALUES (3, :sequence, :label, 'e1', '{}', 'pending', 0, :at, :at)"
                    ),
                    {"sequence": sequence + 1, "label": label, "at": BASE_DATE},
                )
        db.migrate()
        with db.engine.connect() as connection:
            labels = connection.execute(
                text("SELECT channel FROM deliveries ORDER BY sequence")
            ).scalars()
            upgraded = list(labels)
        db.downgrade("0003")
        with db.engine.connect() as connection:
            labels = connection.execute(
                text("SELECT channel FROM deliveries ORDER BY sequence")
            ).scalars()
            downgraded = list(labels)
    finally:
        db.close()
    assert upgraded == [
        "feed",
        channel_key("webhook", "https://a.example/hook"),
        channel_key("apprise", "json://b.example/inbox"),
        "webhook:4",  # its index is gone: it matches no channel and is cancelled when due
    ]
    assert downgraded == ["feed", "webhook:0", "apprise:1", "webhook:4"]


def test_0008_plans_kept_as_blobs_are_written_back_inline_on_downgrade(
    database_url: str,
) -> None:
    plans = [{"params": 7, "cards": ["T4"]}, {"params": 7, "cards": ["T4"]}, {"params": 8}]
    db = open_database(database_url)
    try:
        db.migrate()
        with db.session() as session:
            ensure_repo(session, "org/model", now=BASE_DATE)
            for index, plan in enumerate(plans):
                assert record_revision(
                    session,
                    snapshot(revision("org/model", index), {}),
                    [],
                    plan,
                    processed_at=BASE_DATE,
                )
        with db.engine.connect() as connection:
            keys = connection.execute(
                text("SELECT plan_key FROM estimates ORDER BY revision_pk")
            ).scalars()
            shared = list(keys)
        db.downgrade("0007")
        with db.engine.connect() as connection:
            inline = connection.execute(
                text("SELECT plan FROM estimates ORDER BY revision_pk")
            ).scalars()
            downgraded = [json.loads(v) if isinstance(v, str | bytes) else v for v in inline]
        db.migrate()
        with db.read_session() as session:
            read = [plan_at(session, "org/model", revision("org/model", i).sha) for i in range(3)]
    finally:
        db.close()
    assert shared[0] == shared[1] != shared[2]
    assert downgraded == plans
    assert read == plans


def test_0007_gives_subscriptions_stored_before_it_their_repo_keys(database_url: str) -> None:
    db = open_database(database_url)
    try:
        db.migrate("0006")
        with db.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO subscriptions (id, name, repo_patterns, spec, channels,"
                    " min_severity, created_at, active, next_sequence)"
                    " VALUES (4, 'team', :patterns, '{}', '[]', 0, :at, true, 1)"
                ),
                {"patterns": json.dumps(["org/*", "else/model", "*-x/*"]), "at": BASE_DATE},
            )
        db.migrate()
        with db.read_session() as session:
            found = {
                repo: [s.name for s in subscriptions_naming(session, repo)]
                for repo in ("org/a", "else/model", "else/other", "z-x/m")
            }
    finally:
        db.close()
    assert found == {"org/a": ["team"], "else/model": ["team"], "else/other": [], "z-x/m": ["team"]}
