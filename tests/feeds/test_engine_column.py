"""The model page's engine column: vLLM's start-up as the stored plan carries it, never replanned.

Three repos are recorded on SQLite and PostgreSQL with the demo Llama-2-7B
configs' plans: one at 131,072 tokens whose stored plan carries vLLM's
verdict on an L4 (its KV cache holds 14,896 tokens, so it does not start),
one at 4,096 tokens whose stored plan carries the same on an L4 (it starts),
and one whose stored plan has no engine verdict. The pages are served by the
real app over loopback; every other card says no verdict is stored.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from datetime import UTC, datetime

import httpx

import estimator
from feeds import PublishSettings, create_app
from feeds.view import NO_ENGINE_VERDICT, engine_cell
from storage import Database, record_revision
from storage.records import Revision, Snapshot
from tests.feeds.conftest import ServerThread
from tests.storage.builders import RECORDED_AT
from tracker.demo import HISTORIES

LLAMA2 = HISTORIES / "neurarch-demo" / "llama2-7b"
CONTEXT_4K = LLAMA2 / "2c19299788366b0adb608e08386b56071abf010a" / "config.json"
CONTEXT_128K = LLAMA2 / "59187708e28f74d2a1074eae3e844f9a6d991ebd" / "config.json"
START = datetime(2024, 7, 23, tzinfo=UTC)
ROW = re.compile(r"<tr><td>([^<]*)</td>.*?<td class=\"engine\">([^<]*)</td></tr>")


def stored_plan(context: str, engine: bool) -> dict[str, object]:
    config = json.loads(CONTEXT_4K.read_text() if context == "4k" else CONTEXT_128K.read_text())
    request = estimator.EngineRequest(engine="vllm") if engine else None
    return estimator.plan(config, estimator.Workload(card="L4"), engine=request).to_json()


def record(database: Database, repo_id: str, plan: dict[str, object]) -> None:
    sha = hashlib.sha1(repo_id.encode()).hexdigest()
    with database.session() as session:
        snapshot = Snapshot(Revision(repo_id, sha, (), START, "c"), ())
        record_revision(session, snapshot, [], plan, processed_at=RECORDED_AT)


def engine_cells(page: str) -> dict[str, str]:
    """Card -> the engine cell of the card table, entities decoded."""
    table = page[
        page.index('<table id="cards">') : page.index("</table>", page.index('id="cards"'))
    ]
    return {html.unescape(card): html.unescape(cell) for card, cell in ROW.findall(table)}


def test_the_card_table_shows_the_stored_vllm_verdict_and_says_when_there_is_none(
    database: Database,
) -> None:
    record(database, "org/long", stored_plan("128k", engine=True))
    record(database, "org/short", stored_plan("4k", engine=True))
    record(database, "org/plain", stored_plan("4k", engine=False))
    server = ServerThread()
    app = create_app(database, settings=PublishSettings(base_url=server.url))
    with server.mount(app), httpx.Client(base_url=server.url, timeout=30) as client:
        pages = {repo: client.get(f"/models/org/{repo}") for repo in ("long", "short", "plain")}

    assert all(page.status_code == 200 for page in pages.values())
    long, short, plain = (engine_cells(pages[r].text) for r in ("long", "short", "plain"))
    assert long["L4"] == (
        "does not start at max_model_len 131,072 "
        "(KV cache 14,896 tokens; --max-model-len 14896 starts)"
    )
    assert short["L4"] == "starts; KV cache 14,896 tokens at max_model_len 4,096"
    assert len(long) == len(plain) == 20 and "A100 80GB" in long
    assert {cell for card, cell in long.items() if card != "L4"} == {NO_ENGINE_VERDICT}
    assert set(plain.values()) == {NO_ENGINE_VERDICT}
    assert "vLLM start-up (default settings, the model&#39;s context)" in pages["long"].text


def test_a_verdict_of_another_engine_or_gpu_count_is_not_the_cards_own() -> None:
    config = json.loads(CONTEXT_4K.read_text())
    workload = estimator.Workload(card="L4")
    sglang = estimator.plan(config, workload, engine=estimator.EngineRequest(engine="sglang"))
    wide = estimator.EngineRequest(engine="vllm", tensor_parallel=2)
    split = estimator.plan(config, workload, engine=wide)
    assert engine_cell(sglang.engine, "L4") == NO_ENGINE_VERDICT
    assert engine_cell(split.engine, "L4") == NO_ENGINE_VERDICT
    assert engine_cell(None, "L4") == NO_ENGINE_VERDICT
