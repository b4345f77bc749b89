"""The per-repo summary the index and model pages read, kept current by every write.

A page view must cost the same at 10 or 100,000 tracked repos. Deriving a
repo's newest on-main revision, its advisory count and its plan's family
per request is a walk of every repo; this row holds them, refreshed once per
write transaction that touched the repo (``storage.summaries``), so the index
is a page of one indexed join and a model's siblings one lookup by family.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base

FAMILY_LENGTH = 128


class RepoSummaryRow(Base):
    """One repo's newest on-main revision, advisory count and plan family and size; written
    only by ``storage.summary_upkeep``."""

    __tablename__ = "repo_summaries"
    __table_args__ = (
        Index("ix_repo_summaries_family_total", "family", "total_parameters", "repo_pk"),
    )

    repo_pk: Mapped[int] = mapped_column(
        ForeignKey("repos.id", ondelete="CASCADE"), primary_key=True
    )
    latest_revision_pk: Mapped[int | None] = mapped_column(
        ForeignKey("revisions.id", ondelete="SET NULL")
    )
    advisories: Mapped[int] = mapped_column(Integer, default=0)
    family: Mapped[str | None] = mapped_column(String(FAMILY_LENGTH))
    total_parameters: Mapped[int | None] = mapped_column(BigInteger)
