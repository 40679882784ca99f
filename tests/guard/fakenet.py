"""A fake internet on loopback for the guard's tests: an upstream DNS server (UDP and TCP) with a fixed zone, and
HTTP servers on chosen 127.0.0.0/8 (and ::1) addresses. Everything binds to loopback only and stops with the test."""

from __future__ import annotations

import contextlib
import http.server
import socket
import socketserver
import threading
from dataclasses import dataclass, field

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord


@dataclass
class FakeDns:
    """Answers A/AAAA from `zone` (name -> addresses); NXDOMAIN otherwise. Records every name it was asked."""

    zone: dict[str, list[str]]
    host: str = "127.0.0.1"
    port: int = 0
    asked: list[tuple[str, str, str]] = field(default_factory=list)  # (name, qtype, transport)
    _socks: list[socket.socket] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def answer(self, data: bytes, transport: str) -> bytes:
        req = DNSRecord.parse(data)
        name = str(req.q.qname).rstrip(".").lower()
        qtype = QTYPE[req.q.qtype]
        self.asked.append((name, qtype, transport))
        reply = req.reply()
        for rr in req.ar:  # speak EDNS back if asked, as real servers do
            if rr.rtype == QTYPE.OPT:
                reply.add_ar(rr)
        addrs = self.zone.get(name)
        if addrs is None:
            reply.header.rcode = RCODE.NXDOMAIN
        for a in addrs or []:
            if qtype == "A" and ":" not in a:
                reply.add_answer(RR(name, QTYPE.A, rdata=A(a), ttl=300))
            if qtype == "AAAA" and ":" in a:
                reply.add_answer(RR(name, QTYPE.AAAA, rdata=AAAA(a), ttl=300))
        return reply.pack()

    def start(self) -> FakeDns:
        for _ in range(50):  # a port free for UDP may be taken for TCP: try another
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp.bind((self.host, 0))
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                tcp.bind((self.host, udp.getsockname()[1]))
                break
            except OSError:
                udp.close()
                tcp.close()
        self.port = udp.getsockname()[1]
        tcp.listen(64)
        udp.settimeout(0.2)
        tcp.settimeout(0.2)
        self._socks = [udp, tcp]
        threading.Thread(target=self._serve_udp, args=(udp,), daemon=True).start()
        threading.Thread(target=self._serve_tcp, args=(tcp,), daemon=True).start()
        return self

    def _serve_udp(self, s: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                data, addr = s.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            with contextlib.suppress(Exception):
                s.sendto(self.answer(data, "udp"), addr)

    def _serve_tcp(self, s: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = s.accept()
            except (TimeoutError, OSError):
                continue
            with conn, contextlib.suppress(Exception):
                conn.settimeout(2)
                size = int.from_bytes(conn.recv(2), "big")
                data = b""
                while len(data) < size:
                    chunk = conn.recv(size - len(data))
                    if not chunk:
                        break
                    data += chunk
                out = self.answer(data, "tcp")
                conn.sendall(len(out).to_bytes(2, "big") + out)

    def stop(self) -> None:
        self._stop.set()
        for s in self._socks:
            s.close()

    @property
    def upstream(self) -> str:
        return f"{self.host}:{self.port}"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.endswith("/info/refs") or "/info/refs?" in self.path:
            # git's dumb HTTP protocol: a plain list of refs.
            body = b"0123456789abcdef0123456789abcdef01234567\trefs/heads/main\n"
            ctype = "text/plain"
        else:
            body = f"hello from {self.server.server_address[0]}\n".encode()
            ctype = "text/plain"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _V6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


@dataclass
class FakeHttp:
    host: str
    port: int = 0
    server: socketserver.TCPServer | None = None

    def start(self) -> FakeHttp:
        cls = _V6Server if ":" in self.host else http.server.ThreadingHTTPServer
        self.server = cls((self.host, self.port), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    def url(self, name: str | None = None) -> str:
        host = name or (f"[{self.host}]" if ":" in self.host else self.host)
        return f"http://{host}:{self.port}/"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
