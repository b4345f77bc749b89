"""The published paths at scale: OSV query and batch, the global feed and the zip dump on PostgreSQL.

Run: ``.venv/bin/python -m tests.bench.scale_published --advisories 1000000
[--database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres]``.

A fresh database is created beside the one the URL names, migrated, and
bulk-loaded with COPY: ``advisories / 10`` repos (100 per org), ten
advisories each, whose OSV documents are feeds' own ``build_advisory`` output
(one config change per revision, severities spread over low..critical, 1%
withdrawn). One uvicorn process serves the real app plus a bare ``GET
/bench/bare`` on a free loopback port; a load generator (``CLIENTS`` threads,
each with its own keep-alive connection; one for the batch, whose
latency is the point) measures p50/p99 of that bare
endpoint, ``/v1/query`` for random repos, ``/v1/querybatch`` with 1,000 random
queries and ``/feeds/all.atom``, then the server's peak RSS (VmHWM in
/proc/<pid>/status) after streaming ``/osv/all.zip`` once to the end. The
database is dropped afterwards. Goals: query p99 <= 50 ms, all.zip peak RSS
<= 200 MB.

Measured on PostgreSQL 15, a 2-core machine: 2026-12-03 with a load average
of 7 to 12 from other work (so latencies carry its noise; the bare endpoint
shows how much), and 2026-12-04 at 1M on the quiet machine (load average
below 1 before the run). Latencies p50 / p99 in ms:

    advisories (repos)          100k (10k)     1M (100k)      1M, quiet
    GET /bench/bare             6.7 / 72.2     3.6 / 25.8     2.4 / 6.0
    POST /v1/query              15.1 / 165.7   19.1 / 69.6    16.3 / 34.8
    GET /feeds/all.atom         6.7 / 88.7     6.2 / 22.0     2.6 / 6.7
    POST /v1/querybatch (1,000) 2241 / 3013    573 / 834      264 / 336
    all.atom first render       270            169            43
    all.zip                     78 MB, 106 s   781 MB, 539 s  781 MB, 133 s
    server peak RSS (VmHWM)     120 -> 125 MB  119 -> 125 MB  121 -> 125 MB

Nothing grows with the log: ten times the advisories leaves every latency
within the run-to-run noise and the zip's peak RSS at +4 to +6 MB over the
server's own. On the quiet machine the query p99 is 34.8 ms at 1M (goal
50 ms); under load it was 69.6 ms, the bare endpoint's 25.8 ms showing how
much of that was the scheduler; the query's plans take 0.1 ms
(storage/README.md, Indexes), the rest is the app's per-request Python.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import random
import secrets
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import make_url

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from feeds.osv import build_advisory  # noqa: E402
from storage import Change, Revision, Severity, open_database  # noqa: E402
from storage.records import StoredRevision  # noqa: E402
from storage.repo_ids import org_of  # noqa: E402
from tests.bench.scale_explain import explain_all  # noqa: E402
from tests.daemon.harness import free_port  # noqa: E402

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
PER_REPO = 10
REPOS_PER_ORG = 100
CLIENTS = 4
BASE = datetime(2025, 1, 1, tzinfo=UTC)
FAMILIES = 20
PLANNED_EVERY = 100
PAGE_REQUESTS = 200
SEVERITIES = (Severity.LOW, Severity.MODERATE, Severity.HIGH, Severity.CRITICAL)


def run(database_url: str, advisories: int, skip_zip: bool = False) -> list[str]:
    """Load ``advisories`` into a fresh database next to ``database_url``, measure, drop it."""
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    with fresh_database(database_url) as url:
        started = time.perf_counter()
        repos = bulk_load(url, advisories)
        say(
            f"loaded {advisories:,} advisories of {repos:,} repos by COPY "
            f"in {time.perf_counter() - started:.0f} s"
        )
        database = open_database(url)
        try:
            say("EXPLAIN ANALYZE of each published read (plan nodes top-down, index used):")
            pick = random.Random(3)
            for line in explain_all(
                database,
                repo_name(repos // 2),
                repo_name(repos // 2).split("/")[0],
                sha(f"{repo_name(repos // 3)}@3"),
                [repo_name(pick.randrange(repos)) for _ in range(1000)],
            ):
                say(line)
        finally:
            database.close()
        with serving(url) as (base, pid):
            measure(base, pid, repos, say, skip_zip)
    return lines


def measure(
    base: str, pid: int, repos: int, say: Callable[[str], None], skip_zip: bool = False
) -> None:
    rng = random.Random(16)

    def one_query() -> tuple[str, str, bytes]:
        body = {"package": {"purl": f"pkg:huggingface/{repo_name(rng.randrange(repos))}"}}
        return "POST", "/v1/query", json.dumps(body).encode()

    def one_batch() -> tuple[str, str, bytes]:
        queries = [
            {"package": {"purl": f"pkg:huggingface/{repo_name(rng.randrange(repos))}"}}
            for _ in range(1000)
        ]
        return "POST", "/v1/querybatch", json.dumps({"queries": queries}).encode()

    planned = repo_name((repos // 2) // PLANNED_EVERY * PLANNED_EVERY)
    middle = repo_name(repos // 2)
    cold = timed_get(base, "/feeds/all.atom")
    rows = [
        ("GET / (index, first page)", lambda: ("GET", "/", b""), PAGE_REQUESTS, CLIENTS),
        (
            "GET /?after= (middle page)",
            lambda: ("GET", f"/?after={middle}", b""),
            PAGE_REQUESTS,
            CLIENTS,
        ),
        ("GET /index.json", lambda: ("GET", "/index.json", b""), PAGE_REQUESTS, CLIENTS),
        (
            "GET model page (20 siblings)",
            lambda: ("GET", f"/models/{planned}", b""),
            PAGE_REQUESTS,
            CLIENTS,
        ),
        (
            "GET model page, Markdown",
            lambda: ("GET", f"/models/{planned}.md", b""),
            PAGE_REQUESTS,
            CLIENTS,
        ),
        (
            "GET badge.json",
            lambda: ("GET", f"/models/{planned}/badge.json", b""),
            PAGE_REQUESTS,
            CLIENTS,
        ),
        ("GET /bench/bare", lambda: ("GET", "/bench/bare", b""), 3000, CLIENTS),
        ("POST /v1/query (random repo)", one_query, 3000, CLIENTS),
        ("GET /feeds/all.atom", lambda: ("GET", "/feeds/all.atom", b""), 3000, CLIENTS),
        ("POST /v1/querybatch (1,000)", one_batch, 30, 1),
    ]
    say("keep-alive clients; latencies in ms")
    for label, make, count, clients in rows:
        latencies = load(base, make, count, clients)
        p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
        say(f"{label:30s} {clients} client(s) n={count:5d}  p50 {p50:8.1f}  p99 {p99:8.1f}")
    say(f"GET /feeds/all.atom first render (log version cold): {cold:.1f} ms")
    if skip_zip:
        say(f"server peak RSS {vm_hwm(pid) / 1024:.0f} MB (all.zip not streamed: --skip-zip)")
        return
    before = vm_hwm(pid)
    started = time.perf_counter()
    size, entries = stream_zip(base)
    took = time.perf_counter() - started
    after = vm_hwm(pid)
    say(
        f"GET /osv/all.zip: {size / 1e6:,.0f} MB, {entries:,} entries in {took:.0f} s; "
        f"server peak RSS {before / 1024:.0f} MB before, {after / 1024:.0f} MB after (goal <= 200)"
    )


def repo_name(index: int) -> str:
    return f"org{index // REPOS_PER_ORG:04d}/model-{index:07d}"


def sha(label: str) -> str:
    return hashlib.sha1(label.encode()).hexdigest()


def bulk_load(url: str, advisories: int) -> int:
    """COPY ``advisories // PER_REPO`` repos and their advisories; the number of repos."""
    repos = max(1, advisories // PER_REPO)
    database = open_database(url)
    database.migrate()
    database.close()
    order = list(range(repos * PER_REPO))
    random.Random(7).shuffle(order)  # publication order interleaves repos
    with psycopg.connect(libpq(url), autocommit=False) as connection:
        with connection.cursor().copy(
            "COPY repos (id, repo_id, added_at, status, tracked, options) FROM STDIN"
        ) as copy:
            for index in range(repos):
                copy.write_row((index + 1, repo_name(index), BASE, "active", True, "{}"))
        with connection.cursor().copy(
            "COPY advisories (id, repo_pk, org, old_sha, new_sha, published, modified, withdrawn,"
            " summary, severity, osv) FROM STDIN"
        ) as copy:
            for index in range(repos):
                for row in advisory_rows(index, order):
                    copy.write_row(row)
        load_revisions_and_summaries(connection, repos)
        connection.commit()
    with psycopg.connect(libpq(url), autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")
    return repos


def load_revisions_and_summaries(connection: psycopg.Connection[Any], repos: int) -> None:
    """Each repo's PER_REPO + 1 revisions (the advisories' shas), a stored plan on the newest
    revision of every PLANNED_EVERY-th repo, and every repo's summary row as storage keeps it:
    FAMILIES families, so a model page's siblings query walks families of repos / FAMILIES."""
    plan = bench_plan()
    with connection.cursor().copy(
        "COPY revisions (id, repo_pk, sha, parents, date, title, position, processed_at,"
        " on_main) FROM STDIN"
    ) as copy:
        for index in range(repos):
            name = repo_name(index)
            for step in range(PER_REPO + 1):
                moment = BASE + timedelta(hours=step)
                row_id = index * (PER_REPO + 1) + step + 1
                parents = "[]" if step == 0 else json.dumps([sha(f"{name}@{step - 1}")])
                revision = sha(f"{name}@{step}")
                title = f"Update config ({step})"
                copy.write_row(
                    (row_id, index + 1, revision, parents, moment, title, step, moment, True)
                )
    with connection.cursor().copy(
        "COPY estimates (revision_pk, plan, schema_version) FROM STDIN"
    ) as copy:
        for index in range(0, repos, PLANNED_EVERY):
            planned = {**plan, "model": {**plan["model"], "family": family_of(index)}}
            copy.write_row((newest_revision_pk(index), json.dumps(planned), 1))
    with connection.cursor().copy(
        "COPY repo_summaries (repo_pk, latest_revision_pk, advisories, family,"
        " total_parameters) FROM STDIN"
    ) as copy:
        for index in range(repos):
            total = plan["parameters"]["total"] + index
            copy.write_row(
                (index + 1, newest_revision_pk(index), PER_REPO, family_of(index), total)
            )


def bench_plan() -> dict[str, Any]:
    """The stored plan JSON of a real estimate (Llama 3.2 1B's config), as the daemon stores it."""
    import estimator

    config = json.loads((REPO_ROOT / "tests/data/configs/llama-3.2-1b/config.json").read_text())
    stored: dict[str, Any] = json.loads(json.dumps(estimator.plan(config).to_json()))
    return stored


def family_of(index: int) -> str:
    return f"family-{index % FAMILIES:02d}"


def newest_revision_pk(index: int) -> int:
    return index * (PER_REPO + 1) + PER_REPO + 1


def advisory_rows(index: int, order: list[int]) -> Iterator[tuple[object, ...]]:
    """The COPY rows of repo ``index``'s advisories, built by feeds' own builder."""
    name = repo_name(index)
    for step in range(1, PER_REPO + 1):
        moment = BASE + timedelta(seconds=order[index * PER_REPO + step - 1])
        old = stored(name, step - 1, moment - timedelta(hours=1))
        new = stored(name, step, moment)
        severity = SEVERITIES[(index + step) % len(SEVERITIES)]
        change = Change(
            "code" if severity == Severity.LOW else "config",  # config publishes from moderate
            "config.json",
            "modified",
            step + 10,
            step + 11,
            severity,
            f"num_hidden_layers: {step + 10} -> {step + 11}",
        )
        advisory = build_advisory(name, old, new, [change], None)
        assert advisory is not None
        withdrawn = moment + timedelta(days=30) if (index + step) % 100 == 0 else None
        yield (
            advisory.id,
            index + 1,
            org_of(name),
            advisory.old_sha,
            advisory.new_sha,
            advisory.published,
            withdrawn or advisory.modified,
            withdrawn,
            advisory.summary,
            int(advisory.severity),
            json.dumps(advisory.osv),
        )


def stored(name: str, step: int, moment: datetime) -> StoredRevision:
    revision = Revision(name, sha(f"{name}@{step}"), (), moment, f"Update config ({step})")
    return StoredRevision(revision, moment)


def libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """The URL of a new, empty database on the server of ``server_url``; dropped on exit."""
    name = f"neurarch_scale_{secrets.token_hex(4)}"
    with psycopg.connect(libpq(server_url), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(libpq(server_url), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def serving(url: str) -> Iterator[tuple[str, int]]:
    """(base URL, pid) of the app served from ``url`` by uvicorn in its own process."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.scale_published", "--serve", url, str(port)],
        cwd=REPO_ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(port)
        yield base, process.pid
    finally:
        process.terminate()
        process.wait(30)


def serve(url: str, port: int) -> None:
    import uvicorn
    from fastapi import APIRouter

    from feeds import PublishSettings, create_app

    router = APIRouter()

    @router.get("/bench/bare")
    def bare() -> dict[str, str]:
        return {}

    database = open_database(url)
    settings = PublishSettings(base_url=f"http://127.0.0.1:{port}")
    app = create_app(database, settings=settings, routers=[router])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def wait_up(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/bench/bare")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("server did not start")


def load(
    base: str, make: Callable[[], tuple[str, str, bytes]], count: int, clients: int
) -> list[float]:
    """Latencies (ms) of ``count`` requests made by ``make``, from ``clients`` keep-alive threads."""
    host, port = base.removeprefix("http://").split(":")
    requests = [make() for _ in range(count)]
    latencies: list[float] = []
    lock = threading.Lock()
    failures: list[str] = []

    def worker(mine: list[tuple[str, str, bytes]]) -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        for method, path, body in mine:
            headers = {"Content-Type": "application/json"} if body else {}
            started = time.perf_counter()
            connection.request(method, path, body=body or None, headers=headers)
            response = connection.getresponse()
            response.read()
            took = (time.perf_counter() - started) * 1000
            if response.status != 200:
                failures.append(f"{path}: HTTP {response.status}")
            with lock:
                latencies.append(took)
        connection.close()

    threads = [
        threading.Thread(target=worker, args=(requests[i::clients],)) for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(failures[0])
    return latencies


def timed_get(base: str, path: str) -> float:
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    started = time.perf_counter()
    connection.request("GET", path)
    connection.getresponse().read()
    return (time.perf_counter() - started) * 1000


def stream_zip(base: str) -> tuple[int, int]:
    """(bytes, entries) of all.zip, read to the end in 1 MiB pieces and counted, not kept."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    connection.request("GET", "/osv/all.zip")
    response = connection.getresponse()
    size = 0
    tail = b""
    while piece := response.read(1 << 20):
        size += len(piece)
        tail = (tail + piece)[-(1 << 16) :]
    return size, entries_of(tail)


def entries_of(tail: bytes) -> int:
    """The entry count the archive's end records give (ZIP64's when present)."""
    at = tail.rfind(b"PK\x06\x06")
    if at >= 0:
        return int.from_bytes(tail[at + 32 : at + 40], "little")
    at = tail.rfind(b"PK\x05\x06")
    return int.from_bytes(tail[at + 10 : at + 12], "little")


def percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def vm_hwm(pid: int) -> int:
    """Peak resident memory of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for {pid}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--advisories", type=int, default=100_000)
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--skip-zip", action="store_true", help="do not stream /osv/all.zip")
    parser.add_argument("--serve", nargs=2, metavar=("URL", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return 0
    run(args.database_url, args.advisories, args.skip_zip)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
