"""`audit` as a team keeps it in CI: accepted findings, Hermeto's lock file, vanished pins,
`--fix`, SARIF severities and pins of remote code and tokenizers in sources.

Against the Hub emulator replaying the recorded corpus and a database filled the
way the daemon fills it (the ``world`` of tests/tracker/test_audit.py).
"""

from __future__ import annotations

import json
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from storage.records import Severity
from tests.tracker.test_audit import (
    REPOS,
    SARIF_SCHEMA,
    World,
    advisory_ids,
    backfilled,
    env,
    world,
)
from tracker.audit import Finding, Origin, Pin, PinReport, Published
from tracker.audit.check import IgnoredFinding
from tracker.audit.local_sources import pins_in_file
from tracker.audit.sarif import to_sarif
from tracker.cli import main

__all__ = ["env", "world"]  # fixtures shared with test_audit.py
FIVE = (*REPOS, "distilbert/distilbert-base-uncased", "mistralai/Mistral-7B-Instruct-v0.2")


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["audit", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_an_accepted_advisory_is_listed_with_its_reason_and_does_not_fail_ci(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = REPOS[1]
    pinned = env.main_history(repo_id)[1]
    expected = env.expected(repo_id, pinned)
    ignore = tmp_path / "audit-ignore.toml"
    ignore.write_text(
        "".join(
            f'[[ignore]]\nid = "{i}"\nreason = "reviewed upstream change"\nuntil = 2999-01-01\n'
            for i in sorted(expected)
        ),
        "utf-8",
    )
    code, document, _ = run_json(capsys, f"{repo_id}@{pinned}", "--ignore-file", str(ignore))
    (report,) = document["pins"]
    assert code == 0
    assert advisory_ids(report) == set()
    assert {i["id"] for i in report["ignored"]} == expected
    assert {i["reason"] for i in report["ignored"]} == {"reviewed upstream change"}

    one = sorted(expected)[0]
    code, document, _ = run_json(capsys, f"{repo_id}@{pinned}", "--ignore", one)
    assert code == 1
    assert advisory_ids(document["pins"][0]) == expected - {one}


def test_an_expired_ignore_is_a_finding_again(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = REPOS[1]
    pinned = env.main_history(repo_id)[1]
    expected = env.expected(repo_id, pinned)
    first = sorted(expected)[0]
    ignore = tmp_path / "audit-ignore.toml"
    ignore.write_text(
        f'[[ignore]]\nid = "{first}"\nreason = "until the eval passes"\nuntil = 2020-01-01\n',
        "utf-8",
    )
    code, document, _ = run_json(capsys, f"{repo_id}@{pinned}", "--ignore-file", str(ignore))
    (report,) = document["pins"]
    assert code == 1
    assert advisory_ids(report) == expected
    (again,) = [f for f in report["findings"] if f["advisory"] and f["advisory"]["id"] == first]
    assert "expired: until the eval passes" in again["message"]
    assert report["ignored"] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[ignore]]\nid = "x"\n', "'reason' is required"),
        ('[[ignore]]\nreason = "r"\n', "give 'id' or 'kind'"),
        ('[[ignore]]\nid = "x"\nreason = "r"\nuntil = "soon"\n', "'until' must be a TOML date"),
        ('[[ignore]]\nid = "x"\nreason = "r"\nexpires = 2027-01-01\n', "unknown keys ['expires']"),
        ("[ignores]\n", "unknown top-level keys ['ignores']"),
    ],
)
def test_a_bad_ignore_file_is_one_line_and_exit_2(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    ignore = tmp_path / "ignore.toml"
    ignore.write_text(text, "utf-8")
    capsys.readouterr()
    code = main(["audit", f"{REPOS[0]}@main", "--ignore-file", str(ignore)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def hermeto_lock(path: Path, pins: dict[str, str]) -> Path:
    entries = "".join(
        f'  # {repo_id}\n  - repository: "{repo_id}"\n    revision: "{sha}"\n'
        f'    include_patterns: ["*.json"]\n'
        for repo_id, sha in pins.items()
    )
    path.write_text(f'metadata:\n  version: "1.0"\nmodels:\n{entries}', "utf-8")
    return path


def test_hermetos_lock_file_pins_report_as_the_toml_ones_do(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = {r: env.main_history(r)[1] for r in REPOS}
    lock = hermeto_lock(tmp_path / "huggingface.lock.yaml", pins)
    code, document, _ = run_json(capsys, "--lock", str(lock))
    assert code == 1
    by_repo = {p["repo_id"]: p for p in document["pins"]}
    assert set(by_repo) == set(REPOS)
    for repo_id, sha in pins.items():
        assert by_repo[repo_id]["revision"] == sha
        assert advisory_ids(by_repo[repo_id]) == env.expected(repo_id, sha)
    lines = [p["origin"]["line"] for p in document["pins"]]
    assert lines == [5, 9, 13]  # each "- repository:" line


def test_a_hermeto_lock_with_a_short_revision_is_refused_in_one_line(
    env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = hermeto_lock(tmp_path / "huggingface.lock.yaml", {REPOS[0]: "abc123"})
    capsys.readouterr()
    assert main(["audit", "--lock", str(lock)]) == 2
    assert "'revision' must be a 40-character commit sha" in capsys.readouterr().err


def test_a_pin_the_hub_no_longer_has_is_a_vanished_finding(
    env: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """What super_squash_history leaves a pin: a sha the Hub answers 404 for. (A force-pushed
    commit the Hub still serves by sha is "not on main" instead; test_audit.py covers it.)"""
    repo_id = REPOS[0]
    squashed = "5" * 40
    code, document, _ = run_json(capsys, f"{repo_id}@{squashed}")
    (report,) = document["pins"]
    (finding,) = report["findings"]
    assert code == 1
    assert finding["kind"] == "vanished" and finding["severity"] == "high"
    assert "history was rewritten" in finding["message"]
    assert report["newest"] == env.main_history(repo_id)[-1]


def published(artifact: str, kind: str, severity: Severity) -> Published:
    return Published(
        f"x_NEURARCH-o-m-{artifact}",
        "o/m",
        "a" * 40,
        "b" * 40,
        severity,
        f"{artifact} {kind}",
        ((artifact, kind),),
    )


def test_sarif_gives_security_severity_only_to_findings_about_code_and_pickles(
    tmp_path: Path,
) -> None:
    pin = Pin("o/m", "a" * 40, Origin("command line"))
    findings = (
        Finding(
            "advisory",
            Severity.HIGH,
            "config changed",
            published("config", "modified", Severity.HIGH),
        ),
        Finding(
            "advisory",
            Severity.MODERATE,
            "code added",
            published("code", "added", Severity.MODERATE),
        ),
        Finding(
            "advisory", Severity.HIGH, "pickle", published("weights", "pickle_added", Severity.HIGH)
        ),
        Finding("not-on-main", Severity.MODERATE, "not on main " + "word " * 400),
    )
    log = json.loads(to_sarif([PinReport(pin, "a" * 40, "b" * 40, 3, findings)], tmp_path))
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text("utf-8")))
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    scored = {rid for rid, r in rules.items() if "security-severity" in r["properties"]}
    assert scored == {"x_NEURARCH-o-m-code", "x_NEURARCH-o-m-weights"}
    assert rules["x_NEURARCH-o-m-config"]["defaultConfiguration"]["level"] == "error"
    text = rules["x_NEURARCH-o-m-config"]["shortDescription"]["text"]
    assert text == "config changed"


def test_sarif_keeps_an_ignored_finding_as_a_suppressed_result_and_an_unjudged_pin_as_an_error(
    tmp_path: Path,
) -> None:
    source = tmp_path / "app" / "model.py"
    source.parent.mkdir()
    source.write_text("x = 1\n" * 5, "utf-8")
    kept = Finding("not-on-main", Severity.MODERATE, "not on main")
    accepted = Finding("unpinned", Severity.LOW, "not pinned")
    reports = [
        PinReport(
            Pin("o/m", "a" * 7, Origin("app/model.py", source, 3)),
            "a" * 40,
            None,
            None,
            (kept,),
            ignored=(IgnoredFinding(accepted, "reviewed", "ignore file"),),
        ),
        PinReport(Pin("o/n", None, Origin("command line")), None, None, None, cannot_judge="gone"),
    ]
    log = json.loads(to_sarif(reports, tmp_path))
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text("utf-8")))
    (run,) = log["runs"]
    first, second = run["results"]
    assert "suppressions" not in first
    assert second["suppressions"] == [{"kind": "external", "justification": "reviewed"}]
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "app/model.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3},
    }
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"] == [
        {"level": "error", "message": {"text": "o/n: cannot judge: gone"}}
    ]


def test_sources_pin_remote_code_and_tokenizers_at_their_own_revisions(tmp_path: Path) -> None:
    source = tmp_path / "app.py"
    source.write_text(
        textwrap.dedent(
            """
            from transformers import AutoModel, pipeline

            model = AutoModel.from_pretrained(
                "Qwen/Qwen-7B", revision="aaaaaaa", code_revision="bbbbbbb", trust_remote_code=True
            )
            chat = pipeline("text-generation", model="org/chat", tokenizer_revision="ccccccc")
            """
        ),
        "utf-8",
    )
    pins = [(p.repo_id, p.revision, p.origin.where) for p in pins_in_file(source)]
    assert pins == [
        ("Qwen/Qwen-7B", "aaaaaaa", "from_pretrained()"),
        ("Qwen/Qwen-7B", "bbbbbbb", "from_pretrained() code_revision"),
        ("org/chat", None, "pipeline()"),
        ("org/chat", "ccccccc", "pipeline() tokenizer_revision"),
    ]


@pytest.fixture(scope="module")
def five(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with backfilled(corpus_dir, tmp_path_factory.mktemp("fix"), FIVE) as built:
        yield built


@pytest.fixture
def five_env(five: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """The five-model world as the commands see it: its emulator and database."""
    monkeypatch.setenv("HF_ENDPOINT", five.emulator.endpoint)
    monkeypatch.setenv("NEURARCH_DATABASE_URL", five.database_url)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    return five


def test_fix_moves_each_pin_as_far_as_the_policy_allows_and_the_lock_then_audits_clean(
    five_env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    five = five_env
    oldest = {r: five.main_history(r)[1] for r in FIVE}
    lock = tmp_path / "models.lock"
    lock.write_text(
        "# pins reviewed by the platform team\n"
        + "".join(
            f'[[model]]\nrepo = "{r}"\nrevision = "{sha}"  # initial\n' for r, sha in oldest.items()
        ),
        "utf-8",
    )
    code, document, err = run_json(capsys, "--lock", str(lock), "--fix", "--min-severity", "high")
    rewritten = tomllib.loads(lock.read_text("utf-8"))
    now = {m["repo"]: m["revision"] for m in rewritten["model"]}
    text = lock.read_text("utf-8")
    assert text.startswith("# pins reviewed by the platform team\n") and "# initial" in text
    moved = {line.split()[1] for line in err.splitlines() if line.startswith("moved ")}
    kept = {line.split()[1].split("@")[0] for line in err.splitlines() if line.startswith("kept ")}
    assert moved | kept == set(FIVE) and moved and not moved & kept
    for repo_id in FIVE:
        history = five.main_history(repo_id)
        walls = [
            a
            for a in five.published
            if a.repo_id == repo_id
            and a.severity >= Severity.HIGH
            and a.old_sha in history
            and history.index(a.old_sha) >= 1
        ]
        first_wall = min((history.index(a.new_sha) for a in walls), default=len(history))
        assert history.index(now[repo_id]) == first_wall - 1, repo_id
    findings = [
        f for p in document["pins"] for f in p["findings"] if f["severity"] in ("high", "critical")
    ]
    blocked = {p["repo_id"] for p in document["pins"] if p["behind"]}
    assert {f["advisory"]["id"] for f in findings if f["advisory"]} <= {
        a.id for a in five.published if a.repo_id in blocked
    }
    assert (code == 0) == (not findings)


def test_fix_rewrites_a_hermeto_lock_keeping_its_comments_and_quotes(
    five_env: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    five = five_env
    pins = {r: five.main_history(r)[1] for r in FIVE}
    toml_lock = tmp_path / "models.lock"
    toml_lock.write_text(
        "".join(f'[[model]]\nrepo = "{r}"\nrevision = "{s}"\n' for r, s in pins.items()), "utf-8"
    )
    yaml_lock = hermeto_lock(tmp_path / "huggingface.lock.yaml", pins)
    for lock in (toml_lock, yaml_lock):
        run_json(capsys, "--lock", str(lock), "--fix", "--min-severity", "high")
    from_toml = {m["repo"]: m["revision"] for m in tomllib.loads(toml_lock.read_text())["model"]}
    document = yaml.safe_load(yaml_lock.read_text("utf-8"))
    from_yaml = {m["repository"]: m["revision"] for m in document["models"]}
    assert from_yaml == from_toml != pins
    text = yaml_lock.read_text("utf-8")
    assert f"  # {FIVE[0]}\n" in text and 'revision: "' in text
