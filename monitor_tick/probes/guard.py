"""An opt-in guard for shared installations: refuse probes to loopback, private, link-local,
multicast, reserved and cloud-metadata addresses.

The check is made on the address actually connected to, after our own DNS lookup, for every
connection -- the first request and every redirect alike -- so a public name that resolves to
127.0.0.1 does not pass, and nothing can change between the check and the connect: an HTTP
check hands curl only the addresses checked here (http.lookup pins them).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Carrier-grade NAT is not "private" to Python's ipaddress, but it is not the public internet.
_SHARED = ipaddress.ip_network("100.64.0.0/10")


BLOCKED = "blocked: "  # how the cause of a refused connection begins
UNIX_SOCKETS = f"{BLOCKED}unix sockets"  # a unix socket is this machine's own: never allowed


class BlockedAddress(OSError):
    """A connection the guard refused; str() is the probe's cause."""


def is_refusal(cause: str | None) -> bool:
    """Whether a probe's cause says the guard refused it ('blocked: ...', 'tcp: blocked: ...')."""
    if cause is None:
        return False
    return cause.startswith(BLOCKED) or cause.partition(": ")[2].startswith(BLOCKED)


class AddressGuard:
    """By default blocks every non-public address; `blocked` narrows it to given networks."""

    def __init__(self, blocked: Iterable[str] | None = None) -> None:
        self._blocked: list[IPNetwork] | None = (
            None if blocked is None else [ipaddress.ip_network(net) for net in blocked]
        )

    async def resolve(self, host: str, port: int) -> str:
        """Look `host` up and return the address to connect to; raises BlockedAddress when any
        of its addresses is blocked (a name that also resolves to a private address is refused)."""
        import asyncio

        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        self.check(addresses)
        return str(addresses[0])

    def check(self, addresses: Iterable[IPAddress]) -> None:
        """Raise BlockedAddress when any of a name's `addresses` is blocked."""
        blocked = [a for a in addresses if self.is_blocked(a)]
        if blocked:
            raise BlockedAddress(f"{BLOCKED}{blocked[0]} is not a public address")

    def is_blocked(self, address: IPAddress) -> bool:
        if isinstance(address, ipaddress.IPv6Address):  # IPv4 carried inside IPv6 is judged as IPv4
            address = address.ipv4_mapped or address.sixtofour or address
        if self._blocked is not None:
            return any(address in net for net in self._blocked)
        return (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_multicast
            or address.is_reserved
            or address.is_unspecified
            or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)
            or address in _SHARED
        )
