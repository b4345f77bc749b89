"""SQLAlchemy models, sessions, queries and migrations; the shared history records.

Open a database with ``open_database(url)``, bring its schema up with
``Database.migrate()``, and run queries inside ``with database.session() as
session:``, one transaction per block. Queries take the session and hand back
records (frozen dataclasses from ``storage.records``), never ORM rows.

Importing the package loads only the records, the repo id and the error tree; every
other public name is imported when it is first used (PEP 562 ``__getattr__``, as in
``estimator``). Importing SQLAlchemy and the models costs over half a second, and the
reading commands' light path (``storage.light_reads``, the DB-API alone) must reach
the records without paying it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from storage.errors import (
    BlobCorrupt,
    BlobNotFound,
    BlobTooLarge,
    DatabaseUnavailable,
    DatabaseURLError,
    IntegrityConflict,
    InvalidRecord,
    LeaseNotHeld,
    NotFound,
    RepoNotFound,
    RevisionNotFound,
    SchemaError,
    StorageError,
)
from storage.records import (
    Advisory,
    Change,
    Delivery,
    DeliveryStatus,
    FileEntry,
    PollState,
    RepoStatus,
    Revision,
    Severity,
    Snapshot,
    StoredRevision,
    Subscription,
    TrackedRepo,
    TrackingSummary,
    WebhookEvent,
)
from storage.repo_ids import (
    MAX_REPO_ID_LENGTH,
    InvalidRepoId,
    RepoId,
    repo_id,
)

if TYPE_CHECKING:
    from storage.advisory_rows import (
        advisories,
        put_advisory,
        withdraw_advisories,
    )
    from storage.blobs import (
        MAX_BLOB_BYTES,
        get_blob,
        known_content_keys,
        put_blob,
        put_blobs,
    )
    from storage.database import (
        Database,
        open_database,
    )
    from storage.diff_bases import (
        DiffBase,
        diff_base,
    )
    from storage.history import (
        PLAN_SCHEMA_VERSION,
        changes_between,
        changes_of,
        has_revision,
        latest_revision,
        mark_missing_revisions,
        place_on_main,
        plan_at,
        record_revision,
        recorded_shas,
        revision_log,
        revisions,
        snapshot_at,
    )
    from storage.inbox import (
        mark_webhook_events_processed,
        pending_webhook_events,
        record_webhook_event,
    )
    from storage.outbox import (
        channel_key,
        claim_due_deliveries,
        dead_letters,
        deliveries,
        enqueue_delivery,
        record_delivery_failure,
        record_delivery_success,
    )
    from storage.polling import (
        LeaseFence,
        claim_due_repos,
        due_count,
        extend_lease,
        most_overdue,
        newest_last_modified,
        poll_state,
        poll_states,
        record_check_failure,
        record_check_success,
        record_last_modified,
        release_lease,
        release_leases_of,
        schedule_check,
        tracking_summary,
    )
    from storage.repos import (
        ensure_repo,
        get_repo,
        set_repo_status,
        tracked_repos,
        untrack,
    )
    from storage.subscription_rows import (
        SubscriptionColumns,
        add_subscription,
        get_subscription,
        put_subscription,
        remove_subscription,
        subscription_document,
        subscriptions,
        subscriptions_by_id,
        subscriptions_naming,
        update_subscription,
    )

_ON_FIRST_USE: Final[dict[str, str]] = {
    "Database": "storage.database",
    "DiffBase": "storage.diff_bases",
    "LeaseFence": "storage.polling",
    "MAX_BLOB_BYTES": "storage.blobs",
    "PLAN_SCHEMA_VERSION": "storage.history",
    "SubscriptionColumns": "storage.subscription_rows",
    "add_subscription": "storage.subscription_rows",
    "advisories": "storage.advisory_rows",
    "changes_between": "storage.history",
    "changes_of": "storage.history",
    "channel_key": "storage.outbox",
    "claim_due_deliveries": "storage.outbox",
    "claim_due_repos": "storage.polling",
    "dead_letters": "storage.outbox",
    "deliveries": "storage.outbox",
    "diff_base": "storage.diff_bases",
    "due_count": "storage.polling",
    "enqueue_delivery": "storage.outbox",
    "ensure_repo": "storage.repos",
    "extend_lease": "storage.polling",
    "get_blob": "storage.blobs",
    "get_repo": "storage.repos",
    "get_subscription": "storage.subscription_rows",
    "has_revision": "storage.history",
    "known_content_keys": "storage.blobs",
    "latest_revision": "storage.history",
    "mark_missing_revisions": "storage.history",
    "mark_webhook_events_processed": "storage.inbox",
    "most_overdue": "storage.polling",
    "newest_last_modified": "storage.polling",
    "open_database": "storage.database",
    "pending_webhook_events": "storage.inbox",
    "place_on_main": "storage.history",
    "plan_at": "storage.history",
    "poll_state": "storage.polling",
    "poll_states": "storage.polling",
    "put_advisory": "storage.advisory_rows",
    "put_blob": "storage.blobs",
    "put_blobs": "storage.blobs",
    "put_subscription": "storage.subscription_rows",
    "record_check_failure": "storage.polling",
    "record_check_success": "storage.polling",
    "record_delivery_failure": "storage.outbox",
    "record_delivery_success": "storage.outbox",
    "record_last_modified": "storage.polling",
    "record_revision": "storage.history",
    "recorded_shas": "storage.history",
    "record_webhook_event": "storage.inbox",
    "release_lease": "storage.polling",
    "release_leases_of": "storage.polling",
    "remove_subscription": "storage.subscription_rows",
    "revision_log": "storage.history",
    "revisions": "storage.history",
    "schedule_check": "storage.polling",
    "set_repo_status": "storage.repos",
    "snapshot_at": "storage.history",
    "subscription_document": "storage.subscription_rows",
    "subscriptions": "storage.subscription_rows",
    "subscriptions_by_id": "storage.subscription_rows",
    "subscriptions_naming": "storage.subscription_rows",
    "tracked_repos": "storage.repos",
    "tracking_summary": "storage.polling",
    "untrack": "storage.repos",
    "update_subscription": "storage.subscription_rows",
    "withdraw_advisories": "storage.advisory_rows",
}
"""The public names that need SQLAlchemy (or sit beside what does), and the module of each."""


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use and keep the name here."""
    home = _ON_FIRST_USE.get(name)
    if home is None:
        raise AttributeError(f"module 'storage' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


__all__ = [
    "MAX_BLOB_BYTES",
    "MAX_REPO_ID_LENGTH",
    "PLAN_SCHEMA_VERSION",
    "Advisory",
    "BlobCorrupt",
    "BlobNotFound",
    "BlobTooLarge",
    "Change",
    "Database",
    "DatabaseURLError",
    "DatabaseUnavailable",
    "Delivery",
    "DeliveryStatus",
    "DiffBase",
    "FileEntry",
    "IntegrityConflict",
    "InvalidRecord",
    "InvalidRepoId",
    "LeaseFence",
    "LeaseNotHeld",
    "NotFound",
    "PollState",
    "RepoId",
    "RepoNotFound",
    "RepoStatus",
    "Revision",
    "RevisionNotFound",
    "SchemaError",
    "Severity",
    "Snapshot",
    "StorageError",
    "StoredRevision",
    "Subscription",
    "SubscriptionColumns",
    "TrackedRepo",
    "TrackingSummary",
    "WebhookEvent",
    "add_subscription",
    "advisories",
    "changes_between",
    "changes_of",
    "channel_key",
    "claim_due_deliveries",
    "claim_due_repos",
    "dead_letters",
    "deliveries",
    "diff_base",
    "due_count",
    "enqueue_delivery",
    "ensure_repo",
    "extend_lease",
    "get_blob",
    "get_repo",
    "get_subscription",
    "has_revision",
    "known_content_keys",
    "latest_revision",
    "mark_missing_revisions",
    "mark_webhook_events_processed",
    "most_overdue",
    "newest_last_modified",
    "open_database",
    "pending_webhook_events",
    "place_on_main",
    "plan_at",
    "poll_state",
    "poll_states",
    "put_advisory",
    "put_blob",
    "put_blobs",
    "put_subscription",
    "record_check_failure",
    "record_check_success",
    "record_delivery_failure",
    "record_delivery_success",
    "record_last_modified",
    "record_revision",
    "record_webhook_event",
    "recorded_shas",
    "release_lease",
    "release_leases_of",
    "remove_subscription",
    "repo_id",
    "revision_log",
    "revisions",
    "schedule_check",
    "set_repo_status",
    "snapshot_at",
    "subscription_document",
    "subscriptions",
    "subscriptions_by_id",
    "subscriptions_naming",
    "tracked_repos",
    "tracking_summary",
    "untrack",
    "update_subscription",
    "withdraw_advisories",
]
