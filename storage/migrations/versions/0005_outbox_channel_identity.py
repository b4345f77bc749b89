"""Outbox rows name their channel by identity (kind and a digest of its URL), not by position.

A row used to say ``webhook:1``: the subscription's channel at index 1 *when
it was sent*, so after a subscription was replaced a queued alert went to
whatever channel then sat at that index. Each row now holds
``storage.outbox.channel_key`` of the channel it was queued for; this
migration rewrites the old labels with the key of the channel that sat at
that index (what the row would have been sent to), keeping a label where the
new key would collide with a row already holding it (a subscription listing
one URL twice). Labels whose index no longer exists stay as they are: they
match no channel, so the delivery worker cancels them.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07 13:10:00.000000
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_KEY_DIGITS = 16  # storage.outbox.CHANNEL_KEY_DIGITS, frozen here as this migration wrote it


def _key(kind: str, url: str) -> str:
    return f"{kind}:{hashlib.sha256(url.encode('utf-8')).hexdigest()[:_KEY_DIGITS]}"


def _channels(value: Any) -> list[Any]:
    loaded = json.loads(value) if isinstance(value, str) else value
    return loaded if isinstance(loaded, list) else []


def _is_text(channel: dict[str, Any]) -> bool:
    return isinstance(channel.get("url"), str)


def upgrade() -> None:
    """Rewrite each positional label to the key of the channel that sat at that index."""
    bind = op.get_bind()
    channels = {
        row.id: _channels(row.channels)
        for row in bind.execute(sa.text("SELECT id, channels FROM subscriptions"))
    }
    rows = bind.execute(sa.text("SELECT id, subscription_pk, channel, event_key FROM deliveries"))
    taken = set()
    moves = []
    for row in rows:
        taken.add((row.subscription_pk, row.channel, row.event_key))
        kind, _, index = row.channel.partition(":")
        listed = channels.get(row.subscription_pk, [])
        if not index.isdigit() or int(index) >= len(listed):
            continue
        channel = listed[int(index)]
        if isinstance(channel, dict) and channel.get("type") == kind and _is_text(channel):
            moves.append((row, _key(kind, channel["url"])))
    for row, key in moves:
        if (row.subscription_pk, key, row.event_key) in taken:
            continue
        taken.add((row.subscription_pk, key, row.event_key))
        bind.execute(
            sa.text("UPDATE deliveries SET channel = :key WHERE id = :id"),
            {"key": key, "id": row.id},
        )


def downgrade() -> None:
    """Turn each channel key back into ``kind:index`` of the subscription's current channel list."""
    bind = op.get_bind()
    channels = {
        row.id: _channels(row.channels)
        for row in bind.execute(sa.text("SELECT id, channels FROM subscriptions"))
    }
    for row in bind.execute(sa.text("SELECT id, subscription_pk, channel FROM deliveries")).all():
        for index, channel in enumerate(channels.get(row.subscription_pk, [])):
            kind = channel.get("type") if isinstance(channel, dict) else None
            url = channel.get("url") if isinstance(channel, dict) else None
            if isinstance(kind, str) and isinstance(url, str) and _key(kind, url) == row.channel:
                bind.execute(
                    sa.text("UPDATE deliveries SET channel = :label WHERE id = :id"),
                    {"label": f"{kind}:{index}", "id": row.id},
                )
                break
