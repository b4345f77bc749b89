"""Reading addresses as the OS does, and telling public ones from the rest.

``Egress`` (tracker.alerts.egress) asks this module what a host spells and
why an address is not public; the errors it raises are drawn there. Only the
standard library is imported (idna, requests' own dependency, only for a
non-ASCII host).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Final

from tracker.errors import TrackerError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SHARED: Final = ipaddress.IPv4Network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix
INTERNAL_SUFFIXES: Final = (
    "localhost",  # RFC 6761 section 6.3: always loopback
    "local",  # RFC 6762: multicast DNS
    "internal",  # reserved by ICANN for private use (2024), e.g. metadata.google.internal
    "home.arpa",  # RFC 8375
    "svc",  # Kubernetes DNS-based service discovery: SERVICE.NAMESPACE.svc
    "cluster.local",  # Kubernetes' default cluster domain
    "localdomain",
    "intranet",  # the rest: RFC 6762 appendix G, names private networks use
    "private",
    "corp",
    "home",
    "lan",
)
"""Name suffixes that only mean something inside one network; refused when they do not resolve."""


__all__ = [
    "INTERNAL_SUFFIXES",
    "ConnectRefused",
    "EgressRefused",
    "IPAddress",
    "Unresolvable",
    "embedded",
    "internal_name",
    "normalize_host",
    "numeric_address",
    "parse_address",
    "refusal",
]


class EgressRefused(TrackerError, ValueError):
    """A destination that is not a public address; the message names the host and address."""

    def __init__(self, message: str, *, host: str = "", address: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.host = host
        self.address = address


class Unresolvable(EgressRefused):
    """The host name has no address now; a later attempt may find one."""


class ConnectRefused(EgressRefused, PermissionError):
    """A socket was about to connect to an address alerts may not reach.

    Also a PermissionError (an OSError), so the HTTP libraries treat it as the
    failed connect it is and clean up; the sender then reads the refusal from
    the guard, which keeps the first one.
    """


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination ("a loopback address", ...), or None.

    ``is_global`` alone is not enough on Python 3.11: it calls 224.0.0.1 and
    6to4 forms of private addresses global, so each kind is asked for.
    """
    form, inner = embedded(address)
    if inner is not None:
        reason = refusal(inner)
        return None if reason is None else f"the {form} form of {inner}, {reason}"
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared (100.64.0.0/10)", address.version == 4 and address in SHARED),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("site-local", isinstance(address, ipaddress.IPv6Address) and address.is_site_local),
        ("non-global", not address.is_global),
    )
    kind = next((name for name, hit in checks if hit), None)
    return None if kind is None else f"{_article(kind)} {kind} address"


def embedded(address: IPAddress) -> tuple[str, ipaddress.IPv4Address | None]:
    """The IPv4 address an IPv6 form carries (mapped, 6to4, Teredo client, NAT64), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return "", None
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", address.ipv4_mapped
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address.teredo is not None:
        return "Teredo", address.teredo[1]
    if address in NAT64:
        return "NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return "", None


def normalize_host(host: str) -> str:
    """Lower case, no brackets or trailing dot, IDNA-encoded as requests sends it.

    requests 2.34 (models.py, ``_get_idna_encoded_host``) encodes a non-ASCII
    host with ``idna.encode(host, uts46=True)``, which maps fullwidth digits
    to ASCII ones, so the check sees the host the client will resolve.
    """
    name = host.strip().strip("[]").rstrip(".").lower()
    if not name.isascii():
        import idna  # requests' own dependency

        try:
            name = idna.encode(name, uts46=True).decode("ascii")
        except idna.IDNAError:
            raise EgressRefused(f"host {host!r} is not a valid host name", host=host) from None
    return name


def numeric_address(host: str) -> IPAddress | None:
    """The address a numeric host spells, read as the OS reads it; None for a name."""
    if ":" in host:
        return parse_address(host)
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_INET, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return None
    return ipaddress.IPv4Address(str(infos[0][4][0]))


def parse_address(text: str) -> IPAddress:
    """An IPv4 or IPv6 address; an IPv6 zone (``fe80::1%eth0``) is dropped."""
    try:
        return ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        raise EgressRefused(f"host {text!r} is not a valid address", host=text) from None


def internal_name(name: str) -> str | None:
    """Why ``name`` only means something inside one network, or None."""
    if "." not in name:
        return "a cluster-internal name (a single label)"
    for suffix in INTERNAL_SUFFIXES:
        if name == suffix or name.endswith("." + suffix):
            return f"an internal name (*.{suffix})"
    return None


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"
