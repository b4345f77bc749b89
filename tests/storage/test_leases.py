"""Poll state and row leases: due repos are shared out, never handed to two workers at once."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from storage import (
    Database,
    LeaseFence,
    LeaseNotHeld,
    RepoStatus,
    TrackingSummary,
    claim_due_repos,
    due_count,
    ensure_repo,
    extend_lease,
    has_revision,
    most_overdue,
    poll_state,
    poll_states,
    record_check_failure,
    record_check_success,
    record_revision,
    release_lease,
    schedule_check,
    set_repo_status,
    tracking_summary,
    untrack,
)
from storage.repos import repo_row
from tests.storage.builders import BASE_DATE, RECORDED_AT, revision, snapshot

NOW = BASE_DATE
REPOS = [f"org/model-{n:03d}" for n in range(60)]


def _track(db: Database, repos: list[str]) -> None:
    with db.session() as session:
        for repo in repos:
            ensure_repo(session, repo, now=NOW)


def test_a_new_repo_is_due_at_once_and_a_claimed_one_is_not(database: Database) -> None:
    _track(database, REPOS[:3])
    with database.session() as session:
        assert due_count(session, NOW) == 3
        claimed = claim_due_repos(session, "w1", NOW, limit=2, lease_seconds=60)
    assert [s.repo_id for s in claimed] == REPOS[:2]
    assert all(s.lease_owner == "w1" for s in claimed)
    with database.session() as session:
        again = claim_due_repos(session, "w2", NOW, limit=10, lease_seconds=60)
    assert [s.repo_id for s in again] == [REPOS[2]]


def test_an_expired_lease_can_be_taken_over_and_the_old_owner_cannot_finish(
    database: Database,
) -> None:
    _track(database, REPOS[:1])
    with database.session() as session:
        claim_due_repos(session, "dead-worker", NOW, limit=1, lease_seconds=30)
    later = NOW + timedelta(seconds=31)
    with database.session() as session:
        taken = claim_due_repos(session, "w2", later, limit=1, lease_seconds=30)
        assert [s.lease_owner for s in taken] == ["w2"]
        stale = record_check_success(
            session,
            REPOS[0],
            "dead-worker",
            checked_at=later,
            next_check_at=later + timedelta(hours=1),
            seen_sha="a" * 40,
        )
        assert stale is False
        assert poll_state(session, REPOS[0]).lease_owner == "w2"


def test_success_schedules_the_next_check_and_failures_count_up(database: Database) -> None:
    _track(database, REPOS[:1])
    repo = REPOS[0]
    for attempt in (1, 2, 3):
        with database.session() as session:
            claim_due_repos(session, "w", NOW + timedelta(hours=attempt), 1, 60)
            failures = record_check_failure(
                session,
                repo,
                "w",
                checked_at=NOW,
                next_check_at=NOW + timedelta(hours=attempt),
                error=f"HTTP 503 attempt {attempt}",
            )
        assert failures == attempt
    with database.session() as session:
        claim_due_repos(session, "w", NOW + timedelta(hours=5), 1, 60)
        assert record_check_success(
            session,
            repo,
            "w",
            checked_at=NOW + timedelta(hours=5),
            next_check_at=NOW + timedelta(hours=6),
            seen_sha="b" * 40,
        )
        state = poll_state(session, repo)
    assert (state.failures, state.last_error, state.last_seen_sha) == (0, None, "b" * 40)
    assert state.next_check_at == NOW + timedelta(hours=6)
    assert state.lease_owner is None


def test_released_lease_and_webhook_schedule_make_a_repo_due_now(database: Database) -> None:
    _track(database, REPOS[:2])
    with database.session() as session:
        claim_due_repos(session, "w", NOW, 2, 60)
        release_lease(session, REPOS[0], "w")
        record_check_success(
            session,
            REPOS[1],
            "w",
            checked_at=NOW,
            next_check_at=NOW + timedelta(hours=1),
            seen_sha=None,
        )
        schedule_check(session, REPOS[1], NOW + timedelta(minutes=1))
    with database.session() as session:
        soon = NOW + timedelta(minutes=1)
        assert [s.repo_id for s in claim_due_repos(session, "w2", soon, 10, 60)] == REPOS[:2]


@pytest.mark.parametrize("workers", [4])
def test_concurrent_claimers_never_share_a_repo(database: Database, workers: int) -> None:
    _track(database, REPOS)
    claims: dict[str, list[str]] = {f"w{n}": [] for n in range(workers)}
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def work(owner: str) -> None:
        try:
            start.wait()
            while True:
                with database.session() as session:
                    got = claim_due_repos(session, owner, NOW, limit=3, lease_seconds=600)
                if not got:
                    return
                claims[owner].extend(state.repo_id for state in got)
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(owner,)) for owner in claims]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    handed_out = [repo for owned in claims.values() for repo in owned]
    assert sorted(handed_out) == REPOS  # every repo once, none twice
    with database.read_session() as session:
        for owner, owned in claims.items():
            assert all(poll_state(session, repo).lease_owner == owner for repo in owned)


def test_the_tracking_summary_counts_what_healthz_reports(database: Database) -> None:
    _track(database, REPOS[:5])
    later = NOW + timedelta(hours=1)
    with database.session() as session:
        claimed = [s.repo_id for s in claim_due_repos(session, "w", NOW, 5, lease_seconds=60)]
        assert claimed == REPOS[:5]
        record_check_success(
            session, REPOS[0], "w", checked_at=NOW, next_check_at=later, seen_sha="a" * 40
        )
        record_check_failure(session, REPOS[1], "w", checked_at=NOW, next_check_at=later, error="x")
        set_repo_status(session, REPOS[2], RepoStatus.GATED)
        untrack(session, REPOS[3])
    with database.read_session() as session:
        summary = tracking_summary(session)
    # REPOS[2] is gated (not pending), REPOS[3] is no longer tracked
    assert summary == TrackingSummary(
        tracked=4, backfill_pending=2, failing=1, by_status={"active": 3, "gated": 1}
    )


def test_poll_states_of_named_repos_reads_only_those(database: Database) -> None:
    _track(database, REPOS[:4])
    with database.read_session() as session:
        named = poll_states(session, [REPOS[2], REPOS[0], "org/not-tracked"])
        everything = poll_states(session)
    assert [s.repo_id for s in named] == [REPOS[0], REPOS[2]]
    assert [s.repo_id for s in everything] == REPOS[:4]


def test_most_overdue_names_the_latest_checks_first_and_no_more_than_asked(
    database: Database,
) -> None:
    _track(database, REPOS[:5])
    with database.session() as session:
        for minutes, repo in enumerate(REPOS[:4]):
            # REPOS[0] was due 10 minutes before NOW, REPOS[3] 1 minute before; REPOS[4] at NOW
            schedule_check(session, repo, NOW + timedelta(minutes=3 * minutes - 10))
        claim_due_repos(session, "w1", NOW, limit=1, lease_seconds=60)  # a leased one is late too
        untrack(session, REPOS[1])
    with database.read_session() as session:
        late = most_overdue(session, NOW, limit=2)
        every = most_overdue(session, NOW, limit=10)
    assert [s.repo_id for s in late] == [REPOS[0], REPOS[2]]
    assert [(NOW - s.next_check_at).total_seconds() for s in every] == [600.0, 240.0, 60.0, 0.0]
    assert late[0].lease_owner == "w1"
    with database.read_session() as session:
        assert most_overdue(session, NOW - timedelta(minutes=11), limit=10) == []


def test_a_claim_carries_the_repo_key_and_a_renewal_by_key_fences_like_one_by_name(
    database: Database,
) -> None:
    _track(database, REPOS[:2])
    with database.session() as session:
        [state] = claim_due_repos(session, "w/1", NOW, 1, 60)
        pk = repo_row(session, state.repo_id).id
    assert state.repo_pk == pk
    later = NOW + timedelta(seconds=30)
    with database.session() as session:
        assert extend_lease(session, state.repo_id, "w/1", later, 60, state.repo_pk)
        assert not extend_lease(session, state.repo_id, "w/2", later, 60, state.repo_pk)
    with database.read_session() as session:
        held = poll_state(session, state.repo_id)
    assert held.lease_owner == "w/1"
    assert held.lease_expires_at == later + timedelta(seconds=60)


def test_a_recording_fenced_by_a_lost_lease_writes_nothing_and_a_held_one_is_renewed(
    database: Database,
) -> None:
    _track(database, REPOS[:1])
    with database.session() as session:
        claim_due_repos(session, "w/1", NOW, 1, 60)
    later = NOW + timedelta(seconds=61)
    with database.session() as session:  # w/1's lease ran out: w/2 takes the repo over
        assert [s.lease_owner for s in claim_due_repos(session, "w/2", later, 1, 60)] == ["w/2"]
    first = snapshot(revision(REPOS[0], 0), {"config.json": b"{}"})

    def record(fence: LeaseFence) -> bool:
        with database.session() as session:
            texts = {key: b"{}" for key in first.texts.values()}
            return record_revision(
                session, first, [], None, processed_at=RECORDED_AT, texts=texts, fence=fence
            )

    with pytest.raises(LeaseNotHeld, match="w/1"):
        record(LeaseFence("w/1", later, later + timedelta(seconds=60)))
    with database.read_session() as session:
        assert not has_revision(session, REPOS[0], first.revision.sha)
        assert poll_state(session, REPOS[0]).lease_expires_at == later + timedelta(seconds=60)
    assert record(LeaseFence("w/2", later, later + timedelta(seconds=90)))
    with database.read_session() as session:
        assert has_revision(session, REPOS[0], first.revision.sha)
        held = poll_state(session, REPOS[0])
    assert (held.lease_owner, held.lease_expires_at) == ("w/2", later + timedelta(seconds=90))
