"""Each package's public surface, pinned (as httpx's tests/test_exported_members.py does).

A name added to or dropped from an ``__all__`` changes what other rooms and users may rely
on: this test fails until the list below says so too. ``tracker`` exports nothing: its
surface is the command line (README, tracker/README.md).
"""

from __future__ import annotations

import importlib
from pathlib import Path

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
        "STATED_WORKLOAD",
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
        "DiffBase",
        "FileEntry",
        "IntegrityConflict",
        "InvalidRecord",
        "InvalidRepoId",
        "LeaseFence",
        "LeaseNotHeld",
        "MAX_BLOB_BYTES",
        "MAX_REPO_ID_LENGTH",
        "NotFound",
        "PLAN_SCHEMA_VERSION",
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
        "recorded_shas",
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


@pytest.mark.parametrize("package", ["estimator", "storage"])
def test_a_name_imported_on_first_use_is_never_hidden_by_a_submodule(package: str) -> None:
    # importing package.X binds X on the package: a lazy public name X would then read as
    # the module, whichever import ran first
    module = importlib.import_module(package)
    root = Path(module.__file__ or "").parent
    submodules = {path.stem for path in root.glob("*.py")} | {
        path.parent.name for path in root.glob("*/__init__.py")
    }
    lazy = set(getattr(module, "_ON_FIRST_USE", {}))
    assert sorted(lazy & submodules) == []
    for name in sorted(lazy):
        assert getattr(module, name) is getattr(
            importlib.import_module(module._ON_FIRST_USE[name]), name
        )
