"""schemathesis generates requests from /openapi.json against the real server: no 5xx.

It takes over a minute on two cores, so it is marked slow. The schemathesis CLI runs in a subprocess (its own runner, bounded example
count) with only the ``not_a_server_error`` check: the OSV routes answer
OSV's own error shape, which FastAPI's generated schema does not describe.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.feeds.conftest import Site

MAX_EXAMPLES = 40


@pytest.mark.slow
def test_no_generated_request_gets_a_server_error(demo_site: Site, tmp_path: Path) -> None:
    st = Path(sys.executable).with_name("st")
    run = subprocess.run(
        [
            str(st),
            "run",
            f"{demo_site.url}/openapi.json",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            "1",
            "--report-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    print(tail)
    assert run.returncode == 0, tail
