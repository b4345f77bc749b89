"""Any order of the ways in gives the daemon's own answers (../shared/DESIGN.md, Decisions).

A person may `track` a repo (head only), `track --backfill` it, `untrack` and `track` it
again, let `serve` run (or stop it mid-backfill), and send a Hub webhook, in any order
over several repos. Hypothesis draws such sequences; each ends the way every
installation does (the repos tracked, the daemon run until nothing is due), and the
stored revisions, changes, plans, advisories (timestamps aside) and alert deliveries
must equal those of a fresh database where the daemon alone backfilled the repos,
oldest first. The repos include Mistral-7B-Instruct-v0.2, whose `track` then `serve`
publishes a false "everything removed" advisory unless each revision is diffed
against its parent.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from storage import Database, advisories, changes_of, plan_at, revision_log, tracked_repos
from storage.models import DeliveryRow, SubscriptionRow
from storage.publishing import model_summaries
from storage.summary_upkeep import family_and_total
from tests.fixtures.database import postgres_server_url
from tests.journeys.conftest import MISTRAL, Person, write_config
from tracker.hubsim import HubEmulator

REPOS = (
    "mistralai/Mistral-7B-Instruct-v0.2",
    "meta-llama/Llama-3.2-3B-Instruct",
    "tiiuae/falcon-7b",
)
"""6, 5 and 4 commits on main: small enough for the default run."""
MORE_REPOS = (*REPOS, MISTRAL, "meta-llama/Llama-2-7b-hf")
SUBSCRIBE = (
    "subscribe",
    "watch",
    *("--repo", "mistralai/*", "--repo", "meta-llama/*", "--repo", "tiiuae/*"),
    "--alert-on",
    "fit,config,generation_config,tokenizer,chat_template,weights",
    "--method",
    "lora",
    "--card",
    "T4",
    "--card",
    "A100 80GB",
)
TRIED: dict[str, int] = {}
"""Interleavings tried per backend (and repo set), printed at the end of the session."""
REFERENCE: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}


def entries(repos: tuple[str, ...]) -> st.SearchStrategy[list[tuple[str, Any]]]:
    repo = st.sampled_from(repos)
    one = st.one_of(
        st.tuples(st.just("track"), repo),
        st.tuples(st.just("track --backfill"), repo),
        st.tuples(st.just("untrack"), repo),
        st.tuples(st.just("webhook"), repo),
        st.tuples(st.just("serve"), st.one_of(st.none(), st.integers(1, 6))),
    )
    return st.lists(one, min_size=1, max_size=8)


def walk(person: Person, steps: list[tuple[str, Any]], repos: tuple[str, ...]) -> None:
    """The steps as typed, then what ends every installation: repos tracked, the daemon run."""
    tracked: set[str] = set()
    assert person.run(*SUBSCRIBE).code == 0
    for verb, argument in steps:
        if verb == "track":
            assert person.run("track", argument).code == 0
            tracked.add(argument)
        elif verb == "track --backfill":
            assert person.run("track", argument, "--backfill").code == 0
            tracked.add(argument)
        elif verb == "untrack":
            assert person.run("untrack", argument).code == (0 if argument in tracked else 2)
            tracked.discard(argument)
        elif verb == "webhook":
            assert person.webhook(argument) == 202
        else:
            person.serve(stop_after=argument)
    for repo_id in repos:
        if repo_id not in tracked:
            assert person.run("track", repo_id).code == 0
    person.serve()


def stored(database: Database) -> dict[str, Any]:
    """Everything a reader can see, timestamps and row ids aside."""
    state: dict[str, Any] = {}
    with database.read_session() as session:
        # what the index and a model page's siblings read: the summary every write keeps
        summaries = {
            s.repo.repo_id: (
                None if s.latest is None else s.latest.revision.sha,
                s.advisories,
                family_and_total(s.plan),
            )
            for s in model_summaries(session)
        }
        for repo in tracked_repos(session):
            log = revision_log(session, repo.repo_id)
            state[repo.repo_id] = {
                "revisions": sorted(
                    (r.revision.sha, r.revision.parents, r.revision.title, r.on_main) for r in log
                ),
                "changes": {
                    r.revision.sha: [
                        (c.artifact, c.path, c.kind, c.old, c.new, int(c.severity), c.message)
                        for c in changes_of(session, repo.repo_id, r.revision.sha)
                    ]
                    for r in log
                },
                "plans": {
                    r.revision.sha: plan_at(session, repo.repo_id, r.revision.sha) for r in log
                },
                "advisories": sorted(
                    (a.id, a.old_sha, a.new_sha, int(a.severity), a.summary, _timeless(a.osv))
                    for a in advisories(session, repo_id=repo.repo_id)
                ),
                "summary": summaries[repo.repo_id],
            }
        names = dict(session.query(SubscriptionRow.id, SubscriptionRow.name).all())
        state["deliveries"] = sorted(
            (
                names[row.subscription_pk],
                row.channel,
                row.event_key,
                row.advisory_id,
                repr(_timeless(row.payload)),
                row.status,
            )
            for row in session.query(DeliveryRow).all()
        )
    return state


def _timeless(value: Any) -> Any:
    """A document without its timestamps (when it was processed or queued)."""
    if isinstance(value, dict):
        return {
            k: _timeless(v)
            for k, v in sorted(value.items())
            if k not in {"published", "modified", "created_at", "queued_at", "at", "sent_at"}
        }
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


@contextlib.contextmanager
def fresh_database(backend: str) -> Iterator[str]:
    """An empty database per interleaving: a SQLite file, or a new PostgreSQL schema."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            yield f"sqlite:///{Path(directory) / 'neurarch-trace.db'}"
        return
    server = postgres_server_url()
    dsn = server.set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield server.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
            hide_password=False
        )
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@contextlib.contextmanager
def someone(
    emulator: HubEmulator,
    backend: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Person]:
    with fresh_database(backend) as url, tempfile.TemporaryDirectory() as home:
        config = write_config(Path(home) / "neurarch.toml", url, emulator.endpoint)
        monkeypatch.setenv("NEURARCH_CONFIG", str(config))
        monkeypatch.setenv("NEURARCH_DATA_DIR", str(Path(home) / "data"))
        person = Person(emulator, url, config, capsys)
        try:
            yield person
        finally:
            person.database.close()


def reference(
    emulator: HubEmulator,
    backend: str,
    repos: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    """The daemon's own oldest-first backfill of ``repos`` (`serve --track`), once per backend."""
    key = (backend, repos)
    if key not in REFERENCE:
        with someone(emulator, backend, capsys, monkeypatch) as person:
            assert person.run(*SUBSCRIBE).code == 0
            person.serve(track=repos)
            REFERENCE[key] = stored(person.database)
    state = REFERENCE[key]
    # A comparison of empty states would prove nothing: every repo has a history and
    # advisories, and the subscription queued alerts.
    assert all(state[r]["revisions"] and state[r]["advisories"] for r in repos), state.keys()
    assert all(state[r]["summary"][0] and state[r]["summary"][1] for r in repos)
    assert state["deliveries"]
    return state


def check_any_order(
    hub_emulator: HubEmulator,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    repos: tuple[str, ...],
    steps: list[tuple[str, Any]],
) -> None:
    backend = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    expected = reference(hub_emulator, backend, repos, capsys, monkeypatch)
    with someone(hub_emulator, backend, capsys, monkeypatch) as person:
        walk(person, steps, repos)
        got = stored(person.database)
    label = f"{backend}, {len(repos)} repos"
    TRIED[label] = TRIED.get(label, 0) + 1
    assert got == expected, steps


@pytest.fixture
def emulator_env(hub_emulator: HubEmulator, monkeypatch: pytest.MonkeyPatch) -> HubEmulator:
    monkeypatch.setenv("HF_ENDPOINT", hub_emulator.endpoint)
    monkeypatch.delenv("NEURARCH_DATABASE_URL", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return hub_emulator


SUPPRESS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=8, deadline=None, suppress_health_check=SUPPRESS)
@given(steps=entries(REPOS))
def test_any_order_of_entries_equals_the_daemons_backfill(
    emulator_env: HubEmulator,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    steps: list[tuple[str, Any]],
) -> None:
    check_any_order(emulator_env, database_url, capsys, monkeypatch, REPOS, steps)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=SUPPRESS)
@given(steps=entries(MORE_REPOS))
def test_many_orders_over_more_repos_equal_the_daemons_backfill(
    emulator_env: HubEmulator,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    steps: list[tuple[str, Any]],
) -> None:
    check_any_order(emulator_env, database_url, capsys, monkeypatch, MORE_REPOS, steps)


def test_the_report_counts_interleavings() -> None:
    """Runs last in this module: how many interleavings were tried, per backend."""
    print("\ninterleavings tried:", dict(sorted(TRIED.items())))
