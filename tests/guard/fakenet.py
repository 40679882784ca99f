"""A fake internet for the guard's tests: an upstream DNS server (UDP and TCP) with a fixed zone (addresses, CNAMEs
and DNAMEs), HTTP servers on chosen addresses, a UDP sink and a forward HTTP proxy. Every server keeps a log of the
requests it received, so a test asserts on what the forbidden server saw, not on the client's exit code.
Everything binds to loopback or to addresses of the tests' own network namespaces, and stops with the test."""

from __future__ import annotations

import contextlib
import http.server
import socket
import socketserver
import threading
from dataclasses import dataclass, field

from dnslib import AAAA, CNAME, QTYPE, RCODE, RR, A, DNSRecord


@dataclass
class FakeDns:
    """Answers A/AAAA from `zone` (name -> addresses, or ["CNAME target"], or ["DNAME target"] for every name
    under it), following chains as a recursive resolver's answer would; NXDOMAIN otherwise. Records every name it
    was asked."""

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
        addrs = self._chain(name, qtype, reply)
        if addrs is None:
            reply.header.rcode = RCODE.NXDOMAIN
        for owner, a in addrs or []:
            if qtype == "A" and ":" not in a:
                reply.add_answer(RR(owner, QTYPE.A, rdata=A(a), ttl=300))
            if qtype == "AAAA" and ":" in a:
                reply.add_answer(RR(owner, QTYPE.AAAA, rdata=AAAA(a), ttl=300))
        return reply.pack()

    def _dname(self, name: str) -> tuple[str, str] | None:
        for owner, entries in self.zone.items():
            for e in entries:
                if e.startswith("DNAME ") and name.endswith("." + owner):
                    return owner, e.split()[1]
        return None

    def _chain(self, name: str, qtype: str, reply: DNSRecord) -> list[tuple[str, str]] | None:
        """(owner, address) pairs at the end of the chain from `name`, adding the CNAME/DNAME records on the way."""
        for _ in range(8):
            entries = self.zone.get(name)
            if entries is None:
                dname = self._dname(name)
                if dname is None:
                    return None if not reply.rr else []
                owner, target = dname
                new = name[: -len(owner)] + target
                reply.add_answer(RR(owner, QTYPE.DNAME, rdata=CNAME(target), ttl=300))
                reply.add_answer(RR(name, QTYPE.CNAME, rdata=CNAME(new), ttl=300))
                name = new
                continue
            cname = [e.split()[1] for e in entries if e.startswith("CNAME ")]
            if cname:
                reply.add_answer(RR(name, QTYPE.CNAME, rdata=CNAME(cname[0]), ttl=300))
                name = cname[0]
                continue
            return [(name, a) for a in entries]
        return []

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
        self.server.hits.append((self.client_address[0], self.path))  # type: ignore[attr-defined]
        lookup = getattr(self.server, "lookup", {})
        if self.path.startswith("/resolve?name="):
            # A DoH-style lookup service: the address of a name, over plain HTTP to an allowed host.
            body = (lookup.get(self.path.partition("=")[2], "") + "\n").encode()
            ctype = "text/plain"
        elif self.path.endswith("/info/refs") or "/info/refs?" in self.path:
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


class _Server(http.server.ThreadingHTTPServer):
    def server_bind(self) -> None:
        # HTTPServer.server_bind asks reverse DNS for its own name: seconds of timeouts in a namespace.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])


class _V6Server(_Server):
    address_family = socket.AF_INET6


@dataclass
class FakeHttp:
    """An HTTP server; `hits` logs (client address, path) of every request it got. `lookup` serves
    /resolve?name=NAME (name -> address)."""

    host: str
    port: int = 0
    server: socketserver.TCPServer | None = None
    hits: list[tuple[str, str]] = field(default_factory=list)
    lookup: dict[str, str] = field(default_factory=dict)

    def start(self) -> FakeHttp:
        cls = _V6Server if ":" in self.host else _Server
        self.server = cls((self.host, self.port), _Handler)
        self.server.hits = self.hits  # type: ignore[attr-defined]
        self.server.lookup = self.lookup  # type: ignore[attr-defined]
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


@dataclass
class FakeUdpSink:
    """A UDP server that only logs: (source address, payload) of every datagram it received."""

    host: str
    port: int = 0
    hits: list[tuple[str, bytes]] = field(default_factory=list)
    _sock: socket.socket | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> FakeUdpSink:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((self.host, self.port))
        s.settimeout(0.2)
        self.port = s.getsockname()[1]
        self._sock = s
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                data, addr = self._sock.recvfrom(65536)
            except (TimeoutError, OSError):
                continue
            self.hits.append((addr[0], data))

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    """GET http://host:port/path through the proxy: looked up in the proxy's own table (it is outside the run)."""

    def do_GET(self) -> None:
        import urllib.parse

        self.server.hits.append((self.client_address[0], self.path))  # type: ignore[attr-defined]
        url = urllib.parse.urlsplit(self.path)
        addr = self.server.table.get(url.hostname or "", url.hostname)  # type: ignore[attr-defined]
        try:
            with socket.create_connection((addr, url.port or 80), timeout=5) as up:
                up.sendall(f"GET {url.path or '/'} HTTP/1.0\r\nHost: {url.hostname}\r\n\r\n".encode())
                data = b""
                while chunk := up.recv(65536):
                    data += chunk
        except OSError:
            self.send_error(502)
            return
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class FakeProxy:
    """A forward HTTP proxy outside the run (as on a CI runner): `table` maps names to addresses for it."""

    host: str
    table: dict[str, str]
    port: int = 0
    hits: list[tuple[str, str]] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> FakeProxy:
        self.server = _Server((self.host, self.port), _ProxyHandler)
        self.server.hits = self.hits  # type: ignore[attr-defined]
        self.server.table = self.table  # type: ignore[attr-defined]
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
