"""Everything published: OSV advisories and API, RSS/Atom feeds, badges, pages, the HTTP app.

Reads storage and estimator only (never the tracker). The daemon builds an
advisory with ``build_advisory`` inside a revision's transaction and stores
it with ``storage.put_advisory``; ``create_app`` serves it all.
"""

from feeds.app import create_app
from feeds.delta import EstimateDelta
from feeds.osv import advisory_id, build_advisory, osv_document, withdraw
from feeds.settings import PublishSettings

__all__ = [
    "EstimateDelta",
    "PublishSettings",
    "advisory_id",
    "build_advisory",
    "create_app",
    "osv_document",
    "withdraw",
]
