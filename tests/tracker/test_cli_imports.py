"""The CLI starts light: building the parser imports no command's room, only running it does."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from storage import RepoId, open_database, revision_log
from tests.storage.builders import recorded_at
from tracker.alerts.fields import ALERT_ON
from tracker.alerts.spec import FIT, WATCHABLE
from tracker.commands.render import diff_text, history_text
from tracker.demo import HISTORIES
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hubsim import HubEmulator, estimator_tensor_shapes
from tracker.reads.documents import diff_document, history_document
from tracker.revision.backfill import backfill
from tracker.settings import HubSettings

HEAVY = ("sqlalchemy", "fastapi", "huggingface_hub", "storage", "feeds", "estimator")


def modules_loaded_by(code: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return {name.split(".")[0] for name in json.loads(result.stdout.splitlines()[-1])}


def test_building_the_parser_imports_no_heavy_room() -> None:
    loaded = modules_loaded_by("import tracker.cli\ntracker.cli.build_parser()")
    assert sorted(loaded.intersection(HEAVY)) == []


def test_plan_imports_the_estimator_but_not_storage_or_the_hub() -> None:
    code = (
        "import tracker.cli\n"
        "try:\n"
        "    tracker.cli.main(['plan', '/nonexistent/config.json'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    loaded = modules_loaded_by(code)
    assert "estimator" in loaded
    assert sorted(loaded.intersection({"sqlalchemy", "fastapi", "huggingface_hub"})) == []


def test_subscribe_help_names_every_watchable_artifact() -> None:
    assert (FIT, *WATCHABLE) == ALERT_ON


def test_history_and_diff_reach_a_daemon_without_storage_or_the_hub() -> None:
    # what a command answered by a running daemon imports (tests/tracker/test_cli_daemon_reads.py
    # runs it); storage is imported only when no daemon answers
    loaded = modules_loaded_by(
        "import tracker.cli\n"
        "tracker.cli.build_parser([tracker.cli.command('history'), tracker.cli.command('diff')])\n"
        "import tracker.reads.local_daemon, tracker.commands.render"
    )
    assert sorted(loaded.intersection((*HEAVY, "alembic", "httpx", "pydantic"))) == []


def test_a_named_command_imports_no_other_command() -> None:
    code = (
        "import tracker.cli\n"
        "tracker.cli.build_parser([tracker.cli.command('history')])\n"
        "import json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tracker.commands.'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(result.stdout) == ["tracker.commands.history"]


def loaded_modules_of(code: str) -> set[str]:
    """Every module name in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_plan_of_a_local_config_imports_only_what_that_plan_needs(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        '{"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024,'
        ' "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 1000}'
    )
    loaded = loaded_modules_of(
        "import contextlib, io, tracker.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert tracker.cli.main(['plan', {str(config)!r}]) == 0\n"
        "assert 'LlamaForCausalLM' in out.getvalue() or 'llama' in out.getvalue()"
    )
    tops = {name.split(".")[0] for name in loaded}
    assert sorted(tops & {"sqlalchemy", "fastapi", "huggingface_hub", "storage", "feeds"}) == []
    # no configuration is read for a local file, the terminal rendering needs no Plan JSON
    # converter, and no engine, delta, stack table or other family is imported for a plan
    # that asks for none
    unwanted = {
        "tracker.settings",
        "tracker.config_file",
        "platformdirs",
        "importlib.metadata",
        "tracker.revision.exact_parameters",
        "estimator.deltas",
        "estimator.engine_cards",
        "estimator.stacks",
        "estimator.engines.simulate",
        "estimator.engines.vllm",
        "estimator.engines.sglang",
        "estimator.families.bert",
        "estimator.families.t5",
        "estimator.families.mistral",
        "estimator.plan_json",
        "cattrs",
        "importlib.resources",
    }
    assert sorted(loaded & unwanted) == []
    assert "estimator.families.llama" in loaded


def test_plan_with_an_engine_still_loads_that_engine(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        '{"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024,'
        ' "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 1000}'
    )
    loaded = loaded_modules_of(
        "import contextlib, io, tracker.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert tracker.cli.main(['plan', {str(config)!r}, '--engine', 'vllm']) == 0"
    )
    assert {"estimator.engines.vllm", "estimator.engines.simulate"} <= loaded
    assert "estimator.engines.sglang" not in loaded


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_history_and_diff_read_storage_without_sqlalchemy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no daemon listens at the configured address: the commands read the database
    # themselves, through storage.light_reads, and print what the ORM readers give
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    database = open_database(url)
    database.migrate()
    emulator = HubEmulator(HISTORIES, tensor_shapes=estimator_tensor_shapes)
    hub_url = emulator.start()
    repo = "neurarch-demo/llama3-8b-instruct"
    try:
        backfill(
            database, Hub(connect(HubSettings(hub_url)), max_retries=0), repo, clock=recorded_at
        )
        with database.read_session() as session:
            newest = revision_log(session, RepoId(repo))[0].revision
        expected_history = history_text(history_document(database, repo))
        expected_diff = diff_text(diff_document(database, repo, newest.parents[0], newest.sha))
    finally:
        emulator.stop()
        database.close()
    config = tmp_path / "direct.toml"
    config.write_text(f'[server]\nhost = "127.0.0.1"\nport = {free_port()}\n')
    monkeypatch.setenv("NEURARCH_CONFIG", str(config))
    monkeypatch.setenv("NEURARCH_DATABASE_URL", url)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path))
    for argv, expected, code in (
        (["history", repo], expected_history, 0),
        (["diff", repo, newest.parents[0][:12], newest.sha[:12]], expected_diff, 1),
    ):
        loaded = loaded_modules_of(
            "import contextlib, io, tracker.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert tracker.cli.main({argv!r}) == {code}\n"
            f"assert out.getvalue() == {expected!r}, out.getvalue()"
        )
        assert sorted(name for name in loaded if name.split(".")[0] == "sqlalchemy") == []
        assert "storage.light_reads" in loaded
