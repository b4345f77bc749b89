"""The ORM models. They stay inside ``storage``: queries hand out records, never rows."""

from storage.models.base import Base, UTCDateTime
from storage.models.budget import HubBudgetRow
from storage.models.history import (
    BlobRow,
    ChangeRow,
    EstimateRow,
    RepoRow,
    RevisionFileRow,
    RevisionRow,
    SnapshotRow,
)
from storage.models.operations import PollStateRow, WebhookEventRow
from storage.models.publishing import (
    AdvisoryRow,
    DeliveryRow,
    SubscriptionRepoKeyRow,
    SubscriptionRow,
)
from storage.models.summary import RepoSummaryRow

__all__ = [
    "AdvisoryRow",
    "Base",
    "BlobRow",
    "ChangeRow",
    "DeliveryRow",
    "EstimateRow",
    "HubBudgetRow",
    "PollStateRow",
    "RepoRow",
    "RepoSummaryRow",
    "RevisionFileRow",
    "RevisionRow",
    "SnapshotRow",
    "SubscriptionRepoKeyRow",
    "SubscriptionRow",
    "UTCDateTime",
    "WebhookEventRow",
]
