"""Fit alerts from real revisions to a real receiver, through ``neurarch-trace serve`` processes.

The receiver is down while the daemon records the revisions, so every alert
is committed to the outbox and none is delivered; the daemon is then killed
with SIGKILL, the receiver comes up, and a fresh daemon drains the outbox.
Every alert must arrive once, with a valid signature, in sequence order. The
receiver is on loopback, so the configuration's ``[alerts] allow`` names its
port: without that the daemon would refuse to start with this subscription.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

from storage import DeliveryStatus, channel_key, deliveries, get_subscription, open_database
from tests.daemon.harness import START, DaemonProcess, caught_up, free_port, wait_for, write_config
from tests.fixtures.receiver import Receiver
from tracker.demo import HISTORIES
from tracker.hubsim import HubEmulator, estimator_tensor_shapes

LLAMA2 = HISTORIES / "neurarch-demo" / "llama2-7b"
UPLOAD, LONGER, ROPE_128K = (
    "7dba8667ad27534931d66b826bbdc7b31fad885c",
    "2c19299788366b0adb608e08386b56071abf010a",
    "59187708e28f74d2a1074eae3e844f9a6d991ebd",
)
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
FLIPS = 5


def config_at(sha: str, **override: object) -> bytes:
    config = json.loads((LLAMA2 / sha / "config.json").read_text())
    return json.dumps({**config, **override}, indent=2).encode()


def publish_history(hub: HubEmulator) -> None:
    """Llama-2-7B's context going 2048 -> 4096 -> 128k, and a repo that flips 2048/4096."""
    moment = START
    for sha in (UPLOAD, LONGER, ROPE_128K):
        hub.publish("alerts/llama2-7b", {"config.json": config_at(sha)}, title=sha, date=moment)
        moment += timedelta(minutes=1)
    for step in range(FLIPS + 1):
        context = 4096 if step % 2 else 2048
        files = {"config.json": config_at(UPLOAD, max_position_embeddings=context)}
        hub.publish("alerts/flipper", files, title=f"context {context}", date=moment)
        moment += timedelta(minutes=1)


def subscription_toml(receiver: Receiver) -> str:
    return f"""
[alerts]
tick = 0.3
retry_base = "1s"
retry_max_delay = "2s"
allow = ["127.0.0.1:{receiver.port}"]  # the loopback receiver; alerts go nowhere else

[[subscriptions]]
name = "serve-full-context"
repos = ["alerts/*"]
method = "serve"
batch = 4
seq_len = "max"
cards = ["L4", "A100 80GB"]
alert_on = ["fit"]
channels = [{{ type = "webhook", url = "{receiver.url}", secret = "{SECRET}" }}]
"""


def test_alerts_survive_a_down_receiver_and_kill_9_and_arrive_once_in_order(
    tmp_path: Path,
) -> None:
    hub = HubEmulator(None, tensor_shapes=estimator_tensor_shapes, seed=7)
    hub.start()
    publish_history(hub)
    repos = ["alerts/flipper", "alerts/llama2-7b"]
    receiver = Receiver(free_port(), SECRET)
    url = f"sqlite:///{tmp_path / 'alerts.db'}"
    config = write_config(
        tmp_path / "daemon.toml",
        database_url=url,
        endpoint=hub.endpoint,
        repos=repos,
        port=free_port(),
        workers=2,
    )
    config.write_text(config.read_text() + subscription_toml(receiver))
    expected = 2 + FLIPS  # L4 then A100 stop fitting on llama2; every flip moves L4
    webhook = channel_key("webhook", receiver.url)  # the outbox names the channel by identity
    first = DaemonProcess(config, tmp_path / "first.log").start()
    processes = [first]
    database = open_database(url)
    try:
        first.wait_ready()
        wait_for(lambda: caught_up(database, hub, repos), 120, "the backfill", processes)

        def queued_and_refused() -> bool:
            """Every alert is in the outbox and the first has met the closed port."""
            with database.read_session() as session:
                subscription = get_subscription(session, "serve-full-context")
                rows = [d for d in deliveries(session, subscription.id) if d.channel == webhook]
            return len(rows) == expected and rows[0].attempts >= 1

        wait_for(queued_and_refused, 60, "failed attempts at a down receiver", processes)
        first.kill()  # committed, attempted, never delivered
        assert receiver.seen() == []
        receiver.start()
        second = DaemonProcess(config, tmp_path / "second.log").start()
        processes.append(second)
        wait_for(lambda: len(receiver.seen()) >= expected, 120, "every alert", [second])
        time.sleep(2.0)  # room for a duplicate to show up
        assert second.terminate() == 0
        with database.read_session() as session:
            subscription = get_subscription(session, "serve-full-context")
            rows = [d for d in deliveries(session, subscription.id) if d.channel == webhook]
    finally:
        for process in processes:
            if process.alive():
                process.kill()
        receiver.stop()
        database.close()
        hub.stop()
    ids = [delivery_id for delivery_id, _ in receiver.seen()]
    print(f"\n{len(ids)} alerts, each once, in order; attempts: {[d.attempts for d in rows]}")
    for item in receiver.arrivals:
        print(f"  {item.body['sequence']:>2} {item.body['summary']}")
    assert len(ids) == expected and len(set(ids)) == expected, ids
    sequences = [sequence for _, sequence in receiver.seen()]
    assert sequences == sorted(sequences) == [d.sequence for d in rows]
    assert all(d.status is DeliveryStatus.DELIVERED for d in rows)
    summaries = [r.body["summary"] for r in receiver.arrivals if r.body["repo_id"].endswith("7b")]
    assert "on L4" in summaries[0] and "no longer fits" in summaries[0], summaries
    assert "A100 80GB" in summaries[1] and "no longer fits" in summaries[1], summaries
    flips = [r.body["summary"] for r in receiver.arrivals if r.body["repo_id"].endswith("flipper")]
    assert ["fits again" in s for s in flips] == [False, True, False, True, False], flips
