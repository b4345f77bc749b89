"""Each package's public surface, pinned (as httpx's tests/test_exported_members.py does).

A name added to or dropped from an ``__all__`` changes what other rooms and users may rely
on: this test fails until the list below says so too. ``tracker`` exports nothing: its
surface is the command line (README, tracker/README.md).
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "estimator": (
        "Accuracy",
        "Card",
        "ConfigError",
        "DeltaEntry",
        "EngineRequest",
        "EngineVerdict",
        "EstimateError",
        "Finding",
        "ManifestError",
        "MemoryEstimate",
        "Plan",
        "PlanDelta",
        "PlanJsonError",
        "SCHEMA_VERSION",
        "WeightManifest",
        "Workload",
        "WorkloadError",
        "all_cards",
        "card",
        "delta",
        "measured_accuracy",
        "plan",
    ),
    "storage": (
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
        "FileEntry",
        "IntegrityConflict",
        "InvalidRecord",
        "InvalidRepoId",
        "MAX_BLOB_BYTES",
        "MAX_REPO_ID_LENGTH",
        "NotFound",
        "PLAN_SCHEMA_VERSION",
        "PollState",
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
        "WebhookEvent",
        "add_subscription",
        "advisories",
        "changes_between",
        "changes_of",
        "check_repo_id",
        "claim_due_deliveries",
        "claim_due_repos",
        "dead_letters",
        "deliveries",
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
        "open_database",
        "pending_webhook_events",
        "plan_at",
        "poll_state",
        "poll_states",
        "put_advisory",
        "put_blob",
        "put_subscription",
        "record_check_failure",
        "record_check_success",
        "record_delivery_failure",
        "record_delivery_success",
        "record_last_modified",
        "record_revision",
        "record_webhook_event",
        "release_lease",
        "release_leases_of",
        "remove_subscription",
        "revision_log",
        "revisions",
        "schedule_check",
        "set_repo_status",
        "snapshot_at",
        "subscription_document",
        "subscriptions",
        "subscriptions_by_id",
        "tracked_repos",
        "untrack",
        "update_subscription",
        "withdraw_advisories",
    ),
    "tracker": (),
    "feeds": (
        "EstimateDelta",
        "PublishSettings",
        "advisory_id",
        "build_advisory",
        "create_app",
        "osv_document",
        "withdraw",
    ),
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_the_public_surface_is_what_it_was_agreed_to_be(package: str) -> None:
    module = importlib.import_module(package)
    exported = sorted(module.__all__)
    assert exported == sorted(PUBLIC[package]), "update tests/test_public_api.py with the change"
    assert len(set(exported)) == len(exported), f"{package}.__all__ names something twice"
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == []
