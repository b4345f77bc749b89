"""Finding out cheaply which tracked repos moved: one bulk walk, and one probe per repo.

The Hub has no "changed since" filter, but ``list_models(sort="last_modified")``
lists every model newest first with its sha. A cycle walks it from the top
and stops at the first item older than the last cycle's watermark, so an
idle cycle over any number of tracked repos costs one page request. Tracked
repos whose listed sha differs from the one we last saw are made due now.

Items at the watermark's own second are read again by the next walk (one may
have been committed after the last walk read it). Each result names the
(repo, sha) pairs listed at its watermark's second; handed back to the next
walk, those are passed over unchanged, so an idle cycle asks storage about
nothing however many repos share that second.

The per-repo probe (``HeadProbe``) is the scheduled check: one
``model_info`` request with the sha, the gating and the id, so an unchanged
repo costs exactly one request and a rename (the Hub redirects the old name
to the new id) or a gating change shows up in the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from huggingface_hub import HfApi

from tracker.errors import HubError
from tracker.hub.retry import Retrying
from tracker.hub.translate import translate_hub_errors

EXPAND = ["lastModified", "sha"]


@dataclass(frozen=True)
class DiscoveryResult:
    """Which tracked repos moved, and where the next walk may stop."""

    moved: Mapping[str, str] = field(default_factory=dict)
    """repo id -> the sha the listing shows, for tracked repos whose sha is new to us."""
    last_modified: Mapping[str, datetime] = field(default_factory=dict)
    """repo id -> lastModified, for every tracked repo the walk passed."""
    watermark: datetime | None = None
    scanned: int = 0
    at_watermark: Mapping[str, str | None] = field(default_factory=dict)
    """repo id -> sha of every item listed at the watermark's second (tracked or not)."""


@dataclass(frozen=True)
class HeadInfo:
    """What one probe says about a repo now."""

    repo_id: str
    """The id the Hub answers with: differs from the asked one after a rename."""
    sha: str
    gated: bool
    private: bool


class Discovery:
    """Bulk change discovery over ``list_models`` (one walk per cycle)."""

    def __init__(self, api: HfApi) -> None:
        """``api`` from ``tracker.hub.api.connect``."""
        self._api = api

    def walk(
        self,
        watermark: datetime | None,
        known: Mapping[str, str | None],
        handled: Mapping[str, str | None] | None = None,
    ) -> DiscoveryResult:
        """Walk newest first down to ``watermark``; ``known`` maps tracked repos to their last sha.

        ``handled`` is the last result's ``at_watermark``, once the caller has
        acted on that result: items listed there, at that second with that
        sha, are skipped. Without a watermark (first cycle) only the newest
        item is read, to set one: a fresh daemon checks every tracked repo anyway.
        """
        moved: dict[str, str] = {}
        stamps: dict[str, datetime] = {}
        newest: datetime | None = None
        scanned = 0
        listed: list[tuple[datetime | None, str, str | None]] = []
        handled = handled or {}
        with translate_hub_errors("list_models"):
            for model in self._api.list_models(sort="last_modified", expand=EXPAND):  # type: ignore[arg-type]
                scanned += 1
                stamp = _aware(model.last_modified)
                if stamp is not None and (newest is None or stamp > newest):
                    newest = stamp
                if watermark is None:
                    break
                # Strictly older ends the walk: an item at the watermark's own
                # second may have been committed after the last walk read it.
                if stamp is not None and stamp < watermark:
                    break
                listed.append((stamp, model.id, model.sha))
                if stamp == watermark and handled.get(model.id, "") == model.sha:
                    continue  # the last walk listed it at this second, as it is now
                if model.id in known:
                    if stamp is not None:
                        stamps[model.id] = stamp
                    if model.sha and model.sha != known[model.id]:
                        moved[model.id] = model.sha
        next_watermark = max(filter(None, [newest, watermark]), default=None)
        return DiscoveryResult(
            moved=moved,
            last_modified=stamps,
            watermark=next_watermark,
            scanned=scanned,
            at_watermark={repo: sha for stamp, repo, sha in listed if stamp == next_watermark},
        )


class HeadProbe:
    """The one-request check of a single repo."""

    def __init__(self, api: HfApi, *, retrying: Retrying | None = None) -> None:
        """``api`` from ``tracker.hub.api.connect``."""
        self._api = api
        self.retrying = retrying or Retrying()
        """A transient failure of the probe costs a retry, not the check (tracker.hub.retry)."""

    def head(self, repo_id: str) -> HeadInfo:
        """One ``model_info`` of main's sha, gating and privacy; Hub errors are ``tracker.errors``."""
        with translate_hub_errors(repo_id):
            info = self.retrying.call(
                lambda: self._api.model_info(repo_id, expand=["sha", "gated", "private"])
            )
        if not info.sha:
            raise HubError(f"{repo_id}: the Hub sent no commit sha")
        return HeadInfo(
            repo_id=info.id or repo_id,
            sha=info.sha,
            gated=bool(info.gated),
            private=bool(info.private),
        )


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


__all__ = ["EXPAND", "Discovery", "DiscoveryResult", "HeadInfo", "HeadProbe"]
