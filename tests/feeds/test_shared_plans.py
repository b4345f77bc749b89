"""``plan CONFIG --share`` stores the plan on a real server and prints its page, which shows it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from feeds import PublishSettings, create_app, shared_plans
from storage import open_database
from tests.conftest import REPO_ROOT
from tests.feeds.conftest import ServerThread
from tests.storage.builders import recorded_at
from tracker.commands.share import share
from tracker.errors import UsageError
from tracker.settings import Settings

CONFIG = REPO_ROOT / "tests" / "data" / "configs" / "llama-3.2-1b" / "config.json"
TOKEN = "s3cret-token-for-tests"


def test_share_stores_the_plan_once_and_prints_a_page_that_shows_it(tmp_path: Path) -> None:
    database = open_database(f"sqlite:///{tmp_path / 'site.db'}")
    database.migrate()
    server = ServerThread()
    settings = PublishSettings(base_url=server.url)
    app = create_app(
        database,
        settings=settings,
        routers=[shared_plans.router(database, settings, TOKEN, clock=recorded_at)],
    )
    with server.mount(app):
        config = tmp_path / "neurarch.toml"
        config.write_text(f'[server]\npublic_url = "{server.url}"\napi_token = "{TOKEN}"\n')
        run = subprocess.run(
            [sys.executable, "-m", "tracker.cli", "plan", str(CONFIG), "--share"],
            capture_output=True,
            text=True,
            timeout=120,
            env={"NEURARCH_CONFIG": str(config), "NEURARCH_DATA_DIR": str(tmp_path), "PATH": ""},
            cwd=REPO_ROOT,
        )
        assert run.returncode == 0, run.stderr
        line = run.stdout.strip().splitlines()[-1]
        assert line.startswith(f"Shared: {server.url}/plans/")
        url = line.removeprefix("Shared: ")
        page = httpx.get(url)
        assert page.status_code == 200
        assert "Shared plan: LlamaForCausalLM" in page.text
        assert "Reconstructed from its own config.json with no weights read." in page.text
        assert "<script" not in page.text
        again = subprocess.run(
            [sys.executable, "-m", "tracker.cli", "plan", str(CONFIG), "--share"],
            capture_output=True,
            text=True,
            timeout=120,
            env={"NEURARCH_CONFIG": str(config), "NEURARCH_DATA_DIR": str(tmp_path), "PATH": ""},
            cwd=REPO_ROOT,
        )
        assert again.stdout.strip().splitlines()[-1] == line, "one plan, one id"
        refused = httpx.post(f"{server.url}/api/v1/shared-plans", json={"not": "a plan"})
        assert refused.status_code == 401
        bad = httpx.post(
            f"{server.url}/api/v1/shared-plans",
            json={"not": "a plan"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert bad.status_code == 400 and "not a Plan document" in bad.text
        assert httpx.get(f"{server.url}/plans/{'0' * 64}").status_code == 404
        wrong = Settings.load(config, {"NEURARCH_DATA_DIR": str(tmp_path)})
        wrong = replace(wrong, daemon=replace(wrong.daemon, api_token="nope"))
        import estimator

        with pytest.raises(UsageError, match="refused the plan: HTTP 401"):
            share(estimator.plan(json.loads(CONFIG.read_text())), wrong)
    database.close()
