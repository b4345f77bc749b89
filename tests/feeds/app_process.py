"""The whole published app (feeds' create_app plus the webhook router) served in its own process.

``python -m tests.feeds.app_process DATABASE_URL PORT SECRET`` serves it on
127.0.0.1:PORT until killed, so a test can read the server's own memory from
/proc/<pid>/status without the test's allocations in the figure.
"""

from __future__ import annotations

import sys

import uvicorn

from feeds import PublishSettings, create_app
from feeds.webhooks import create_webhook_router
from storage import open_database


def main(argv: list[str]) -> None:
    url, port, secret = argv
    database = open_database(url)
    database.migrate()
    router = create_webhook_router(database, secret=secret)
    settings = PublishSettings(base_url=f"http://127.0.0.1:{port}")
    app = create_app(database, settings=settings, routers=[router])
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning", access_log=False)


if __name__ == "__main__":
    main(sys.argv[1:])
