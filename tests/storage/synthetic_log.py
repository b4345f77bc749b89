"""A synthetic advisory log of any size, inserted in bulk: what the paging and dump tests read.

Advisories are real records (ids, shas, aware times, an OSV document with
the fields feeds serves); only their number and spread are made up. Every
third one shares its published time with the one before, so the tests meet
the ties a keyset cursor must break by id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from storage import Database
from storage.advisory_rows import advisory_row_values
from storage.models import AdvisoryRow
from storage.records import Advisory, Severity
from storage.repos import ensure_repo, repo_row

START = datetime(2025, 3, 1, tzinfo=UTC)


def sha(label: str) -> str:
    return hashlib.sha1(label.encode()).hexdigest()


def synthetic_advisories(count: int, repos: int) -> list[Advisory]:
    """``count`` advisories spread round-robin over ``repos`` repos ``org<k>/model-<n>``."""
    built = []
    for n in range(count):
        repo_id = f"org{n % repos % 3}/model-{n % repos}"
        published = START + timedelta(minutes=n - n % 3 // 2)
        advisory_id = f"x_NEURARCH-TEST-{n:07d}"
        new_sha = sha(f"{repo_id}@{n}")
        osv = {
            "schema_version": "1.6.0",
            "id": advisory_id,
            "published": published.isoformat(),
            "modified": published.isoformat(),
            "summary": f"{repo_id}: num_hidden_layers changed ({n})",
            "details": "x" * (n % 50),
            "affected": [{"package": {"ecosystem": "GIT", "name": repo_id}, "versions": [new_sha]}],
        }
        withdrawn = published + timedelta(days=1) if n % 11 == 0 else None
        built.append(
            Advisory(
                id=advisory_id,
                repo_id=repo_id,
                old_sha=sha(f"{repo_id}@{n - 1}"),
                new_sha=new_sha,
                published=published,
                modified=withdrawn or published + timedelta(seconds=n % 7),
                summary=str(osv["summary"]),
                severity=Severity(n % 5),
                osv=osv,
                withdrawn=withdrawn,
            )
        )
    return built


def bulk_insert(database: Database, advisories: Sequence[Advisory]) -> None:
    """Store ``advisories`` (tracking their repos first) with one executemany."""
    with database.session() as session:
        pks = {}
        for repo_id in sorted({a.repo_id for a in advisories}):
            ensure_repo(session, repo_id, now=START)
            pks[repo_id] = repo_row(session, repo_id).id
        session.execute(
            insert(AdvisoryRow),
            [advisory_row_values(a, pks[a.repo_id]) for a in advisories],
        )
