"""Where alerts may go: public addresses only, unless the operator's allow-list says more.

A subscriber names the URL, so without this the daemon would POST signed
alerts wherever it is told: 127.0.0.1, the cloud metadata service at
169.254.169.254, a cluster-internal ``redis``. Each destination is checked
when the subscription is stored (CLI, API, configuration file), again when an
alert is sent (DNS answers change), and at connect time for every socket the
send opens (``tracker.alerts.guard``), so a name that resolves to a public
address when checked and to 127.0.0.1 when connected cannot win.

    TrackerError
    ├── EgressRefused (ValueError)   a destination that is not a public address; names
    │   │                            the host and the address
    │   ├── Unresolvable             the host name has no address (at send time: retried)
    │   └── ConnectRefused           a socket refused at connect time (also PermissionError)
    └── AllowListError (ValueError)  an allow-list entry that is not CIDR, address or host[:port]

Numeric hosts are read the way the operating system reads them
(``getaddrinfo`` with ``AI_NUMERICHOST``: 0x7f000001, 2130706433, 0177.0.0.1
and 127.1 are all 127.0.0.1), and IPv6 forms that carry an IPv4 address
(mapped, 6to4, Teredo, NAT64) are judged by the address they carry
(``tracker.alerts.addresses``, where the errors are defined).
Only the standard library is imported, so Settings can parse the allow-list
without loading the alerts room.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol
from urllib.parse import urlsplit

from tracker.alerts.addresses import (
    ConnectRefused,
    EgressRefused,
    IPAddress,
    Unresolvable,
    embedded,
    internal_name,
    normalize_host,
    numeric_address,
    parse_address,
    refusal,
)
from tracker.errors import TrackerError

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]
"""(host, port) -> every address the host resolves to; raises OSError when it has none."""

ALLOW_HINT: Final = "[alerts] allow (or NEURARCH_ALERTS_ALLOW)"
APPRISE_HOST_SCHEMES: Final[Mapping[str, int]] = {
    "json": 80,
    "jsons": 443,
    "form": 80,
    "forms": 443,
    "xml": 80,
    "xmls": 443,
    "apprise": 80,
    "apprises": 443,
    "gotify": 80,
    "gotifys": 443,
    "mmost": 80,
    "mmosts": 443,
    "rocket": 80,
    "rockets": 443,
    "ncloud": 80,
    "nclouds": 443,
    "nctalk": 80,
    "nctalks": 443,
    "hassio": 8123,
    "hassios": 443,
    "kodi": 8080,
    "kodis": 443,
    "mqtt": 1883,
    "mqtts": 8883,
}
"""apprise URL schemes whose host is the server contacted, with its default port.

Checked when stored and before sending; any other apprise URL (discord://ID/TOKEN,
whose "host" is an id) is checked at connect time only, against the service's address.
"""

__all__ = [
    "ALLOW_HINT",
    "APPRISE_HOST_SCHEMES",
    "AllowList",
    "AllowListError",
    "Cleared",
    "ConnectRefused",
    "Egress",
    "EgressRefused",
    "Unresolvable",
    "refusal",
    "system_resolver",
]


class AllowListError(TrackerError, ValueError):
    """An allow-list entry that is neither a CIDR, an address, nor host[:port]."""


@dataclass(frozen=True)
class NetworkRule:
    """Addresses in ``network`` (on ``port``, or any port) are allowed."""

    entry: str
    network: IPNetwork
    port: int | None = None


@dataclass(frozen=True)
class HostRule:
    """The host name ``host`` (on ``port``, or any port) is allowed, whatever it resolves to."""

    entry: str
    host: str
    port: int | None = None


@dataclass(frozen=True)
class AllowList:
    """The operator's exceptions: internal receivers alerts may reach (empty: none)."""

    rules: tuple[NetworkRule | HostRule, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str], where: str = "alerts.allow") -> AllowList:
        """``10.0.0.0/8``, ``127.0.0.1``, ``127.0.0.1:8080``, ``[::1]:8080``, ``host[:port]``."""
        return cls(tuple(_rule(str(entry).strip(), where) for entry in entries))

    @property
    def entries(self) -> tuple[str, ...]:
        """The entries as the operator wrote them, for settings output and error messages."""
        return tuple(rule.entry for rule in self.rules)

    def permits_address(self, address: IPAddress, port: int) -> str | None:
        """The entry that allows ``address`` on ``port``, or None."""
        candidates = {address, embedded(address)[1] or address}
        for rule in self.rules:
            if not isinstance(rule, NetworkRule) or rule.port not in (None, port):
                continue
            if any(a.version == rule.network.version and a in rule.network for a in candidates):
                return rule.entry
        return None

    def permits_host(self, host: str, port: int) -> str | None:
        """The entry that allows the host name ``host`` on ``port``, or None."""
        for rule in self.rules:
            if isinstance(rule, HostRule) and rule.host == host and rule.port in (None, port):
                return rule.entry
        return None


@dataclass(frozen=True)
class Cleared:
    """A destination that passed: its addresses, and the allow-list entry that let it, if any."""

    host: str
    port: int
    addresses: tuple[IPAddress, ...] = ()
    allowed_by: str | None = None


class ChannelLike(Protocol):
    """A channel as the stores hold it: ``to_json()`` gives its ``type`` and ``url``."""

    def to_json(self) -> Mapping[str, object]:
        """The channel's stored JSON: its ``type`` and ``url`` are what egress reads."""
        ...


class SubscriptionLike(Protocol):
    """What ``Egress.vet`` reads of a subscription: its name and channels."""

    @property
    def name(self) -> str:
        """The subscription's name, used to say which one a refused channel belongs to."""
        ...

    @property
    def channels(self) -> Sequence[ChannelLike]:
        """The channels whose destinations are checked."""
        ...


def system_resolver(host: str, port: int) -> Sequence[str]:
    """Every address ``getaddrinfo`` gives for ``host``, as the HTTP clients will connect."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


class Egress:
    """The policy: public addresses, plus the allow-list; ``resolver`` is the DNS seam."""

    def __init__(self, allow: AllowList | None = None, resolver: Resolver = system_resolver):
        self.allow = allow or AllowList()
        self.resolver = resolver

    def check_url(self, url: str, *, unresolved_ok: bool = False) -> Cleared:
        """Check an http(s) URL's host; see ``check_host``."""
        host, port = http_destination(url)
        return self.check_host(host, port, unresolved_ok=unresolved_ok)

    def check_host(self, host: str, port: int, *, unresolved_ok: bool = False) -> Cleared:
        """Clear ``host`` on ``port`` or raise EgressRefused naming it and the address.

        Every address the name resolves to must be public or allowed. A name that
        does not resolve is refused if it only makes sense inside a network
        (``redis``, ``*.internal``); otherwise it is Unresolvable, or cleared
        without addresses when ``unresolved_ok`` (storing a subscription: the
        send checks again, and at connect time).
        """
        name = normalize_host(host)
        entry = self.allow.permits_host(name, port)
        if entry is not None:
            return Cleared(name, port, self._addresses_quietly(name, port), entry)
        literal = numeric_address(name)
        if literal is not None:
            self._judge(host, literal, port)
            return Cleared(name, port, (literal,))
        try:
            found = [parse_address(a) for a in self.resolver(name, port)]
        except (OSError, ValueError):
            found = []
        if not found:
            internal = internal_name(name)
            if internal is not None:
                raise EgressRefused(
                    f"host {host!r} is {internal}; alerts go only to public addresses "
                    f"unless {ALLOW_HINT} lists it",
                    host=host,
                )
            if unresolved_ok:
                return Cleared(name, port)
            raise Unresolvable(f"host name {host!r} could not be resolved", host=host)
        for address in found:
            self._judge(host, address, port, resolved=True)
        return Cleared(name, port, tuple(found))

    def connect_refusal(self, address: IPAddress, port: int) -> str | None:
        """Why a socket may not connect to ``address`` on ``port``, or None if it may."""
        if self.allow.permits_address(address, port) is not None:
            return None
        return refusal(address)

    def vet(self, subscription: SubscriptionLike) -> None:
        """Refuse a subscription whose channels point at an address alerts may not reach."""
        for index, channel in enumerate(subscription.channels):
            document = channel.to_json()
            kind, url = str(document.get("type")), str(document.get("url"))
            where = f"subscription {subscription.name!r}: channels[{index}]"
            try:
                destination = channel_destination(kind, url)
                if destination is not None:
                    self.check_host(*destination, unresolved_ok=True)
            except EgressRefused as exc:
                raise EgressRefused(
                    f"{where}: {kind} {exc.message}", host=exc.host, address=exc.address
                ) from None

    def _judge(self, host: str, address: IPAddress, port: int, *, resolved: bool = False) -> None:
        if self.allow.permits_address(address, port) is not None:
            return
        reason = refusal(address)
        if reason is None:
            return
        verb = "resolves to" if resolved else "is"
        raise EgressRefused(
            f"host {host!r} {verb} {address.compressed}, {reason}; alerts go only to public "
            f"addresses unless {ALLOW_HINT} lists it",
            host=host,
            address=address.compressed,
        )

    def _addresses_quietly(self, name: str, port: int) -> tuple[IPAddress, ...]:
        """An allowed name's addresses, pinned for connect time; none if it does not resolve."""
        literal = numeric_address(name)
        if literal is not None:
            return (literal,)
        try:
            return tuple(parse_address(a) for a in self.resolver(name, port))
        except (OSError, ValueError):
            return ()


def http_destination(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL, the port defaulting by scheme."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise EgressRefused("the URL's port is not a number from 0 to 65535") from None
    if not parts.hostname:
        raise EgressRefused("the URL names no host")
    return parts.hostname, port or (443 if parts.scheme.lower() == "https" else 80)


def channel_destination(kind: str, url: str) -> tuple[str, int] | None:
    """(host, port) a channel's URL names as its server; None if only connect time can tell."""
    if kind == "webhook":
        return http_destination(url)
    scheme = urlsplit(url).scheme.lower()
    if scheme not in APPRISE_HOST_SCHEMES:
        return None
    host, port = http_destination(url)
    return host, port if urlsplit(url).port else APPRISE_HOST_SCHEMES[scheme]


def _rule(entry: str, where: str) -> NetworkRule | HostRule:
    bad = AllowListError(
        f"{where}: {entry!r} is not a CIDR (10.0.0.0/8), an address (127.0.0.1, "
        "[::1]:8080) or a host[:port] (receiver.internal:8443)"
    )
    if not entry:
        raise bad
    if "/" in entry:
        try:
            return NetworkRule(entry, ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise bad from None
    host, port = _split_port(entry, bad)
    try:
        literal = numeric_address(host)
    except EgressRefused:
        raise bad from None
    if literal is not None:
        return NetworkRule(entry, ipaddress.ip_network(literal), port)
    name = host.rstrip(".").lower()
    if not name or not all(ch.isalnum() or ch in "-._" for ch in name) or not name.isascii():
        raise bad
    return HostRule(entry, name, port)


def _split_port(entry: str, bad: AllowListError) -> tuple[str, int | None]:
    """``[::1]:8080`` -> ("::1", 8080); ``::1`` -> ("::1", None); ``host:80`` -> ("host", 80)."""
    if entry.startswith("["):
        host, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise bad
        return host, _port(rest[1:], bad) if rest else None
    if entry.count(":") == 1:
        host, _, text = entry.partition(":")
        return host, _port(text, bad)
    return entry, None


def _port(text: str, bad: AllowListError) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise bad
    return int(text)
