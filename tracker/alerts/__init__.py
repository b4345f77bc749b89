"""Subscriptions and alerts: which revisions a subscriber hears about, and how it reaches them.

``fields`` is the table of a subscription's fields (the CLI's flags, the
API's schema); ``spec`` parses what a subscription asks for; ``evaluate`` turns a new
revision into alerts inside the revision's transaction; ``deliver`` drains
the outbox to webhooks and notification URLs with retries; ``egress`` and
``guard`` keep every push to public addresses or the operator's allow-list.
"""
