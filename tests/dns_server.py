"""A small DNS server on 127.0.0.1 for tests: UDP (and TCP for truncated answers) in a thread,
answering from a table with dnspython's message API. Nothing here touches the network."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Mapping

import dns.flags
import dns.message
import dns.rcode
import dns.rrset
import pytest

HOST = "127.0.0.1"
# names that misbehave instead of answering from the table
SERVFAIL = "servfail.test."
SILENT = "silent.test."  # never answered: the client times out


class DnsServer:
    """Answers `records` ({(name, type): [rdata text]}); a name not in the table is NXDOMAIN,
    a known name without the type an empty NOERROR answer. `queries` lists (name, type) asked."""

    def __init__(self, records: Mapping[tuple[str, str], list[str]], host: str = HOST, port: int = 0) -> None:
        """On `host`:`port` (0: any free port; 53 where a system resolver must find it)."""
        self.records = {
            (name.lower().rstrip(".") + ".", rdtype.upper()): values for (name, rdtype), values in records.items()
        }
        self.queries: list[tuple[str, str]] = []
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind((host, port))
        self.port = self._udp.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def answer(self, wire: bytes) -> bytes | None:
        query = dns.message.from_wire(wire)
        question = query.question[0]
        name, rdtype = question.name.to_text().lower(), dns.rdatatype.to_text(question.rdtype)
        self.queries.append((name, rdtype))
        response = dns.message.make_response(query)
        if name == SILENT:
            return None
        if name == SERVFAIL:
            response.set_rcode(dns.rcode.SERVFAIL)
        elif not any(known == name for known, _ in self.records):
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif (name, rdtype) in self.records:
            response.answer.append(dns.rrset.from_text_list(name, 60, "IN", rdtype, self.records[(name, rdtype)]))
        return response.to_wire()

    def _serve(self) -> None:
        self._udp.settimeout(0.05)
        while not self._stop.is_set():
            try:
                wire, peer = self._udp.recvfrom(4096)
            except TimeoutError:
                continue
            reply = self.answer(wire)
            if reply is not None:
                self._udp.sendto(reply, peer)

    def __enter__(self) -> DnsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._udp.close()


@pytest.fixture
def dns_server() -> Iterator[DnsServer]:
    records = {
        ("app.test", "A"): ["192.0.2.10", "192.0.2.11"],
        ("app.test", "AAAA"): ["2001:db8::10"],
        ("app.test", "MX"): ["10 mail.app.test."],
        ("app.test", "TXT"): ['"v=spf1 -all"'],
    }
    with DnsServer(records) as server:
        yield server
