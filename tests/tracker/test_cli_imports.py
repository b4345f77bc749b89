"""The CLI starts light: building the parser imports no command's room, only running it does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tracker.alerts.fields import ALERT_ON
from tracker.alerts.spec import FIT, WATCHABLE

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
    # no configuration is read for a local file, and no engine, delta, stack table or other family
    # is imported for a plan that asks for none
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
