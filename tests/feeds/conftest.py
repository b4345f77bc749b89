"""Fixtures of the publishing tests: a populated demo site and a real uvicorn server for it."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service

from feeds import PublishSettings, create_app
from storage import Database, open_database
from storage.records import Advisory
from tests.feeds.populate import hostile_commit, populate


@dataclass(frozen=True)
class Site:
    database: Database
    advisories: list[Advisory]
    url: str
    app: FastAPI


class ServerThread:
    """uvicorn serving ``app`` on a free 127.0.0.1 port in a thread."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server: uvicorn.Server | None = None
        self.thread: threading.Thread | None = None

    def mount(self, app: FastAPI) -> ServerThread:
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        assert self.server is not None and self.thread is not None, "mount an app first"
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None and self.thread is not None
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The demo histories (plus one commit carrying markup) backfilled, published and served."""
    path: Path = tmp_path_factory.mktemp("site") / "site.db"
    database = open_database(f"sqlite:///{path}")
    database.migrate()
    advisories = populate(database, script=hostile_commit)
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app):
        yield Site(database, advisories, server.url, app)
    database.close()


CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,2000",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail("chromium and chromium-driver are not installed (.ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def no_alert(driver: webdriver.Chrome) -> bool:
    try:
        _ = driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False
