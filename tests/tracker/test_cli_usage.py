"""The CLI's own doors: a usage error is one line on stderr (exit 2), and --version answers."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from tracker.cli import main


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["plan"], "the following arguments are required: SOURCE"),
        (["track", "org/name", "--bacfill"], "unrecognized arguments: --bacfill"),
        (["trak", "org/name"], "invalid choice: 'trak'"),
        ([], "the following arguments are required: COMMAND"),
        (["plan", "x/y", "--batch", "many"], "argument --batch"),
    ],
)
def test_usage_error_is_one_line_on_stderr(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("neurarch-trace") and says in err
    assert "--help" in err  # where the full usage is


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"neurarch-trace {version('neurarch-trace')}\n"
