"""Alerts go only where they may: public addresses, or what the operator's allow-list names.

Every host form of ``tests.fixtures.hostile_hosts`` is refused when a subscription
is stored (CLI exit 2, configuration file at daemon start; the API's 422s are in
tests/feeds/test_subscriptions_api.py) and when an alert is sent. Connect time
is tested with real sockets: a resolver seam answers a public address when the
host is checked while the real connect reaches 127.0.0.1 (DNS rebinding), and a
real allow-listed receiver redirects to a loopback port the list does not name.
Nothing of ours is monkeypatched; receivers are real HTTP servers on loopback.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import ipaddress
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from storage import (
    Database,
    DeliveryStatus,
    add_subscription,
    channel_key,
    deliveries,
    enqueue_delivery,
)
from storage import subscriptions as stored_subscriptions
from storage.records import Delivery
from tests.fixtures.hostile_hosts import PUBLIC_ADDRESSES, REFUSED_HOSTS
from tests.fixtures.receiver import Receiver, free_port
from tracker.alerts.channels import (
    AppriseSender,
    DeliveryFailed,
    FeedSender,
    Sender,
    WebhookSender,
)
from tracker.alerts.deliver import DeliveryWorker, RetryPolicy
from tracker.alerts.egress import (
    AllowList,
    AllowListError,
    ConnectRefused,
    Egress,
    EgressRefused,
    HostRule,
    NetworkRule,
    Unresolvable,
)
from tracker.alerts.guard import guarded
from tracker.alerts.spec import Channel, parse_subscription
from tracker.cli import main
from tracker.daemon import Daemon
from tracker.settings import Settings, SettingsError

SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def answering(table: dict[str, Sequence[str]]) -> Callable[[str, int], Sequence[str]]:
    """A resolver seam: the addresses ``table`` gives a name, and no address for others."""

    def resolve(host: str, port: int) -> Sequence[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return resolve


def rebinding(public: str = PUBLIC_ADDRESSES[0]) -> Callable[[str, int], Sequence[str]]:
    """Answers a public address for every name, whatever the name will connect to later."""
    return lambda host, port: [public]


def delivery(channel: str = "webhook:0") -> Delivery:
    return Delivery(
        id=1,
        subscription_id=7,
        sequence=1,
        channel=channel,
        event_key="alert-1",
        payload={"kind": "fit", "summary": "org/model no longer fits on T4", "repo_id": "org/m"},
        status=DeliveryStatus.PENDING,
        attempts=1,
        next_attempt_at=T0,
        created_at=T0,
    )


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    started: list[Receiver] = []
    yield started
    for receiver in started:
        receiver.stop()


@pytest.fixture
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


def start(receivers: list[Receiver], **options: object) -> Receiver:
    receiver = Receiver(free_port(), **options).start()  # type: ignore[arg-type]
    receivers.append(receiver)
    return receiver


# --- the policy ----------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "words"), REFUSED_HOSTS)
def test_every_internal_host_form_is_refused_naming_host_and_address(host: str, words: str) -> None:
    with pytest.raises(EgressRefused) as refused:
        Egress().check_url(f"https://{host}:8443/hook", unresolved_ok=True)
    message = refused.value.message
    assert words in message, message
    assert message.startswith(f"host {host.strip('[]').lower()!r} ")
    assert message.endswith("unless [alerts] allow (or NEURARCH_ALERTS_ALLOW) lists it")


def test_public_addresses_and_names_resolving_to_them_pass() -> None:
    egress = Egress(resolver=answering({"hooks.example.com": list(PUBLIC_ADDRESSES)}))
    cleared = egress.check_url("https://hooks.example.com/in")
    assert [a.compressed for a in cleared.addresses] == list(PUBLIC_ADDRESSES)
    assert (cleared.port, cleared.allowed_by) == (443, None)
    for address in PUBLIC_ADDRESSES:
        literal = f"[{address}]" if ":" in address else address
        assert egress.check_url(f"http://{literal}/").addresses[0].compressed == address


def test_a_name_with_one_internal_address_among_public_ones_is_refused() -> None:
    egress = Egress(resolver=answering({"hooks.example.com": ["93.184.216.34", "10.0.0.7"]}))
    with pytest.raises(EgressRefused) as refused:
        egress.check_url("https://hooks.example.com/in")
    assert refused.value.address == "10.0.0.7"
    assert "host 'hooks.example.com' resolves to 10.0.0.7, a private address" in str(refused.value)


def test_a_public_looking_name_that_resolves_to_loopback_is_refused() -> None:
    egress = Egress(resolver=answering({"hooks.example.com": ["127.0.0.1"]}))
    with pytest.raises(EgressRefused, match=r"resolves to 127\.0\.0\.1, a loopback address"):
        egress.check_url("https://hooks.example.com/in")


def test_localhost_is_refused_through_the_real_resolver() -> None:
    with pytest.raises(EgressRefused) as refused:
        Egress().check_url("http://localhost:8080/")
    assert refused.value.address in ("127.0.0.1", "::1")


def test_a_name_without_address_is_stored_but_not_sent_to() -> None:
    egress = Egress(resolver=answering({}))
    cleared = egress.check_url("https://hooks.example.com/in", unresolved_ok=True)
    assert (cleared.host, cleared.addresses) == ("hooks.example.com", ())
    with pytest.raises(Unresolvable, match=r"host name 'hooks\.example\.com' could not be"):
        egress.check_url("https://hooks.example.com/in")


def test_allow_list_entries_parse_to_networks_addresses_and_hosts() -> None:
    allow = AllowList.parse(["10.0.0.0/8", "127.0.0.1:8080", "[::1]:9000", "Hooks.Internal", "r:1"])
    assert allow.rules == (
        NetworkRule("10.0.0.0/8", ipaddress.ip_network("10.0.0.0/8")),
        NetworkRule("127.0.0.1:8080", ipaddress.ip_network("127.0.0.1/32"), 8080),
        NetworkRule("[::1]:9000", ipaddress.ip_network("::1/128"), 9000),
        HostRule("Hooks.Internal", "hooks.internal"),
        HostRule("r:1", "r", 1),
    )


@pytest.mark.parametrize("entry", ["", "10.0.0.0/33", "127.0.0.1:0", "host:http", "[::1", "a b"])
def test_a_bad_allow_list_entry_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(AllowListError) as error:
        AllowList.parse([entry], "alerts.allow")
    assert str(error.value).startswith(f"alerts.allow: {entry!r} is not a CIDR (10.0.0.0/8)")


def test_the_allow_list_opens_exactly_what_it_names() -> None:
    egress = Egress(AllowList.parse(["127.0.0.1:8080", "10.1.0.0/16", "redis:6379"]))
    assert egress.check_url("http://127.0.0.1:8080/").allowed_by is None  # allowed by address
    assert egress.check_url("http://10.1.2.3/").addresses[0].compressed == "10.1.2.3"
    assert egress.check_url("http://redis:6379/").allowed_by == "redis:6379"
    for refused in ("http://127.0.0.1:8081/", "http://10.2.0.1/", "http://redis:80/"):
        with pytest.raises(EgressRefused):
            egress.check_url(refused)


def test_settings_read_the_allow_list_from_the_file_and_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[alerts]\nallow = ["10.0.0.0/8", "receiver.internal:8443"]\n')
    base = {"NEURARCH_DATA_DIR": str(tmp_path)}
    assert Settings.load(None, base).daemon.alerts.allow.entries == ()
    assert Settings.load(config, base).daemon.alerts.allow.entries == (
        "10.0.0.0/8",
        "receiver.internal:8443",
    )
    env = {**base, "NEURARCH_ALERTS_ALLOW": "127.0.0.1:9000, [::1]:9000"}
    assert Settings.load(config, env).daemon.alerts.allow.entries == (
        "127.0.0.1:9000",
        "[::1]:9000",
    )
    with pytest.raises(SettingsError, match=r"^NEURARCH_ALERTS_ALLOW: '10\.0\.0\.0/99' is not"):
        Settings.load(None, {**base, "NEURARCH_ALERTS_ALLOW": "10.0.0.0/99"})
    config.write_text('[alerts]\nallow = "10.0.0.0/8"\n')
    with pytest.raises(SettingsError, match=r"alerts\.allow: Input should be a valid list, got "):
        Settings.load(config, base)


# --- subscribe time --------------------------------------------------------------------------


def test_subscribe_refuses_every_internal_host_in_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "subs.db"
    monkeypatch.setenv("NEURARCH_DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    monkeypatch.delenv("NEURARCH_ALERTS_ALLOW", raising=False)
    outcomes = []
    for host, words in REFUSED_HOSTS:
        for flags in (
            ["--webhook", f"http://{host}:8080/hook", "--secret", SECRET],
            ["--apprise", f"json://{host}:8080/hook"],
        ):
            code = main(["subscribe", "s", "--repo", "org/*", *flags])
            err = capsys.readouterr().err
            one_line = err.count("\n") == 1 and err.startswith("neurarch-trace: subscription 's'")
            outcomes.append((host, flags[0], code, one_line and words in err))
    assert outcomes == [(host, flag, 2, True) for host, _ in REFUSED_HOSTS for flag in FLAGS]
    assert not database.exists()  # refused before storage was opened


FLAGS = ("--webhook", "--apprise")


def test_subscribe_stores_a_loopback_receiver_the_allow_list_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEURARCH_DATABASE_URL", f"sqlite:///{tmp_path / 'subs.db'}")
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    url = "http://127.0.0.1:9100/hook"
    flags = ["subscribe", "s", "--repo", "org/*", "--webhook", url, "--secret", SECRET]
    monkeypatch.setenv("NEURARCH_ALERTS_ALLOW", "127.0.0.1:9101")
    assert main(flags) == 2
    assert "is 127.0.0.1, a loopback address" in capsys.readouterr().err
    monkeypatch.setenv("NEURARCH_ALERTS_ALLOW", "127.0.0.1:9100")
    assert main(flags) == 0
    assert "s: subscription stored" in capsys.readouterr().out


def configured(tmp_path: Path, url: str) -> tuple[Settings, Daemon]:
    document = {
        "subscriptions": [
            {
                "name": "internal",
                "repos": ["org/*"],
                "cards": ["T4"],
                "channels": [{"type": "webhook", "url": url, "secret": SECRET}],
            }
        ]
    }
    settings = Settings.in_dir(tmp_path).with_document(document, "daemon.toml")
    return settings, Daemon.open(settings)


def test_a_configured_subscription_to_an_internal_host_stops_the_daemon_start(
    tmp_path: Path,
) -> None:
    _, daemon = configured(tmp_path, "http://169.254.169.254/latest/meta-data")
    try:
        with pytest.raises(EgressRefused) as refused:
            daemon.track_configured()
        with daemon.database.read_session() as session:
            assert stored_subscriptions(session) == []
    finally:
        daemon.database.close()
    assert str(refused.value) == (
        "subscription 'internal': channels[0]: webhook host '169.254.169.254' is "
        "169.254.169.254, a link-local address; alerts go only to public addresses unless "
        "[alerts] allow (or NEURARCH_ALERTS_ALLOW) lists it"
    )
    settings, daemon = configured(tmp_path, "http://169.254.169.254/latest/meta-data")
    daemon.database.close()
    allow = AllowList.parse(["169.254.169.254"])
    alerts = replace(settings.daemon.alerts, allow=allow)
    daemon = Daemon.open(replace(settings, daemon=replace(settings.daemon, alerts=alerts)))
    try:
        daemon.track_configured()
        with daemon.database.read_session() as session:
            assert [s.name for s in stored_subscriptions(session)] == ["internal"]
    finally:
        daemon.database.close()


def test_serve_refuses_the_configuration_in_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "daemon.toml"
    config.write_text(
        f'[storage]\ndatabase_url = "sqlite:///{tmp_path / "s.db"}"\n'
        '[[subscriptions]]\nname = "x"\nrepos = ["org/*"]\ncards = ["T4"]\n'
        'channels = [{ type = "apprise", url = "json://0x7f000001/in" }]\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--config", str(config), "serve", "--role", "worker"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "NEURARCH_DATA_DIR": str(tmp_path)},
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("neurarch-trace") or "Traceback" in line]
    assert errors == [
        "neurarch-trace: subscription 'x': channels[0]: apprise host '0x7f000001' is "
        "127.0.0.1, a loopback address; alerts go only to public addresses unless "
        "[alerts] allow (or NEURARCH_ALERTS_ALLOW) lists it"
    ]


# --- send time -------------------------------------------------------------------------------


def test_every_internal_host_is_refused_at_send_time_as_a_permanent_failure(
    http: requests.Session,
) -> None:
    webhook, apprise = WebhookSender(http, lambda: T0), AppriseSender()
    outcomes = []
    for host, words in REFUSED_HOSTS:
        for sender, channel in (
            (webhook, Channel("webhook", f"http://{host}:8080/hook", SECRET)),
            (apprise, Channel("apprise", f"json://{host}:8080/hook")),
        ):
            with pytest.raises(DeliveryFailed) as failure:
                sender.send(delivery(), channel)
            outcomes.append(
                (host, channel.kind, failure.value.permanent, words in str(failure.value))
            )
    assert outcomes == [(h, kind, True, True) for h, _ in REFUSED_HOSTS for kind in KINDS]


KINDS = ("webhook", "apprise")


def test_the_guard_refuses_connects_only_inside_a_delivery(receivers: list[Receiver]) -> None:
    port = start(receivers).port
    with guarded(Egress()) as guard, pytest.raises(ConnectRefused) as refused:
        socket.create_connection(("127.0.0.1", port), timeout=5)
    assert str(refused.value) == (
        f"connection to 127.0.0.1 port {port} refused: a loopback address; alerts go only to "
        "public addresses unless [alerts] allow (or NEURARCH_ALERTS_ALLOW) lists it"
    )
    assert guard.refused is refused.value
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # outside: the test's own

    def connect() -> str:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "connected"

    with guarded(Egress()), concurrent.futures.ThreadPoolExecutor(1) as pool:
        # a thread of its own has its own context: not a delivery
        assert pool.submit(connect).result() == "connected"
        # work submitted in a copy of the delivery's context, as apprise does, is checked
        copied = pool.submit(contextvars.copy_context().run, connect)
        with pytest.raises(ConnectRefused):
            copied.result()
    with guarded(Egress(AllowList.parse([f"127.0.0.1:{port}"]))):
        assert connect() == "connected"


def test_dns_rebinding_cannot_reach_a_loopback_webhook(
    receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = start(receivers, secret=SECRET)
    url = f"http://localhost:{receiver.port}/hooks"
    sender = WebhookSender(http, lambda: datetime.now(UTC), egress=Egress(resolver=rebinding()))
    with pytest.raises(DeliveryFailed) as failure:
        sender.send(delivery(), Channel("webhook", url, SECRET))
    assert failure.value.permanent
    assert failure.value.message.startswith("connection to 127.0.0.1 port ") or (
        failure.value.message.startswith("connection to ::1 port ")
    )
    assert f"port {receiver.port} refused: a loopback address" in failure.value.message
    assert receiver.arrivals == []


def test_dns_rebinding_cannot_reach_a_loopback_apprise_receiver(receivers: list[Receiver]) -> None:
    receiver = start(receivers)
    sender = AppriseSender(Egress(resolver=rebinding()))
    with pytest.raises(DeliveryFailed) as failure:
        sender.send(delivery("apprise:0"), Channel("apprise", f"json://localhost:{receiver.port}/"))
    assert failure.value.permanent
    assert f"port {receiver.port} refused: a loopback address" in failure.value.message
    assert receiver.arrivals == []


def test_a_redirect_to_a_loopback_port_off_the_allow_list_is_refused(
    receivers: list[Receiver], http: requests.Session
) -> None:
    hidden = start(receivers)
    front = start(receivers, redirect_to=f"http://127.0.0.1:{hidden.port}/admin")
    only_front = Egress(AllowList.parse([f"127.0.0.1:{front.port}"]))
    with pytest.raises(DeliveryFailed) as failure:
        AppriseSender(only_front).send(
            delivery("apprise:0"), Channel("apprise", f"json://127.0.0.1:{front.port}/in")
        )
    assert failure.value.permanent
    assert failure.value.message.startswith(
        f"connection to 127.0.0.1 port {hidden.port} refused: a loopback address"
    )
    with pytest.raises(DeliveryFailed) as webhook:
        WebhookSender(http, lambda: datetime.now(UTC), egress=only_front).send(
            delivery(), Channel("webhook", f"http://127.0.0.1:{front.port}/in", SECRET)
        )
    assert webhook.value.message == "HTTP 307 (redirects are not followed; use the final URL)"
    assert (front.redirected, hidden.arrivals) == (2, [])
    both = Egress(AllowList.parse([f"127.0.0.1:{front.port}", f"127.0.0.1:{hidden.port}"]))
    AppriseSender(both).send(
        delivery("apprise:0"), Channel("apprise", f"json://127.0.0.1:{front.port}/in")
    )
    assert [a.path for a in hidden.arrivals] == ["/admin"]


def test_an_allow_listed_host_name_reaches_its_receiver(
    receivers: list[Receiver], http: requests.Session
) -> None:
    receiver = start(receivers, secret=SECRET)
    by_name = Egress(AllowList.parse([f"localhost:{receiver.port}"]))
    url = f"http://localhost:{receiver.port}/hooks"
    WebhookSender(http, lambda: datetime.now(UTC), egress=by_name).send(
        delivery(), Channel("webhook", url, SECRET)
    )
    assert [a.path for a in receiver.arrivals] == ["/hooks"]


def test_apprise_json_to_loopback_dead_letters_without_the_allow_list_and_arrives_with_it(
    database: Database, receivers: list[Receiver]
) -> None:
    receiver = start(receivers)
    spec = parse_subscription(
        {
            "name": "local-json",
            "repos": ["org/*"],
            "cards": ["T4"],
            "channels": [{"type": "apprise", "url": f"json://127.0.0.1:{receiver.port}/in"}],
        }
    )
    with database.session() as session:
        record = add_subscription(
            session,
            spec.name,
            spec.repos,
            spec.spec_json(),
            [c.to_json() for c in spec.channels],
            created_at=T0,
        )

    def alert_then_drain(key: str, egress: Egress) -> None:
        with database.session() as session:
            payload = {"summary": f"{key}: T4 no longer fits"}
            channel = channel_key("apprise", spec.channels[0].url)
            enqueue_delivery(session, record.id, channel, key, payload, now=T0)
        senders: dict[str, Sender] = {"apprise": AppriseSender(egress), "feed": FeedSender()}
        DeliveryWorker(database, senders, lambda: T0, RetryPolicy()).run_once()

    alert_then_drain("alert-1", Egress())
    with database.read_session() as session:
        first = deliveries(session, record.id)[0]
    assert (first.status, first.attempts) == (DeliveryStatus.DEAD_LETTER, 1)
    assert first.last_error == (
        "host '127.0.0.1' is 127.0.0.1, a loopback address; alerts go only to public "
        "addresses unless [alerts] allow (or NEURARCH_ALERTS_ALLOW) lists it"
    )
    assert receiver.arrivals == []
    alert_then_drain("alert-2", Egress(AllowList.parse([f"127.0.0.1:{receiver.port}"])))
    with database.read_session() as session:
        rows = deliveries(session, record.id)
    assert [r.status for r in rows] == [DeliveryStatus.DEAD_LETTER, DeliveryStatus.DELIVERED]
    assert [a.path for a in receiver.arrivals] == ["/in"]
