"""The DNS policy proxy (asyncio, UDP and TCP, on 127.0.0.1 and ::1, one port). Every guarded DNS query lands
here: allowed names are forwarded to the upstream resolvers and their addresses learned; denied names are resolved
by the proxy itself (their addresses go to the deny map) and answered NXDOMAIN in enforce mode. Addresses are
published to the BPF maps *before* the reply leaves, so the client's next connect already sees them."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import struct
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, cast

from phalanx.guard import dnswire
from phalanx.guard.dnswire import Question, WireError
from phalanx.guard.errors import ProxyError
from phalanx.guard.events import Event, EventSink, Verdict, rfc3339
from phalanx.guard.policy import Decision, Policy
from phalanx.guard.procinfo import ProcessRef

__all__ = ["Attributor", "DnsProxy", "Learner", "Who"]

UPSTREAM_TIMEOUT_S = 2.0
TCP_IDLE_S = 10.0
BIND_ATTEMPTS = 50
_NO_ANSWER = dnswire.Answer([], ())
_IDS = struct.Struct("!2048H")


@dataclass(frozen=True)
class Who:
    """The process behind a query, snapshotted when the query arrived (it is alive, waiting for the answer)."""

    pid: int
    comm: str
    cmdline: tuple[str, ...]
    parents: tuple[ProcessRef, ...]
    exe: str = ""


Attributor = Callable[[int, int], Who | None]  # (IP protocol, client port) -> process
Learner = Callable[[str, list[tuple[str, int]], Decision], None]


@dataclass
class _Pending:
    reply: Callable[[bytes], None]
    query: bytes
    q: Question
    decision: Decision
    who: Who | None
    protocol: str
    sent_at: float
    upstream: int
    quiet: bool = False  # the guard's own lookup: no event, no learning


class _ClientUdp(asyncio.DatagramProtocol):
    def __init__(self, proxy: DnsProxy) -> None:
        self.proxy = proxy
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        transport = self.transport
        if transport is None:
            return
        self.proxy.handle(data, lambda reply: transport.sendto(reply, addr), 17, int(addr[1]))

    def error_received(self, exc: Exception) -> None:
        pass  # an ICMP error about one client says nothing about the proxy's health


class _UpstreamUdp(asyncio.DatagramProtocol):
    def __init__(self, proxy: DnsProxy) -> None:
        self.proxy = proxy

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.proxy.on_upstream_reply(data)

    def error_received(self, exc: Exception) -> None:
        pass  # refused by an upstream: the sweep retries the next one or answers SERVFAIL


class DnsProxy:
    """Forwards, decides and records DNS for one guarded run."""

    def __init__(
        self,
        policy: Policy,
        upstreams: list[tuple[str, int]],
        sink: EventSink,
        *,
        attribute: Attributor | None = None,
        learn: Learner | None = None,
        crash_after: int | None = None,
    ) -> None:
        if not upstreams:
            raise ProxyError("no upstream DNS server: none in /etc/resolv.conf; pass --upstream HOST[:PORT]")
        self.policy = policy
        self.upstreams = upstreams
        self.sink = sink
        self.attribute = attribute
        self.learn = learn
        self.port = 0
        self.queries = 0
        self._crash_after = crash_after
        self._pending: dict[int, _Pending] = {}
        self._id_pool: list[int] = []
        self._decisions: dict[str, Decision] = {}
        self._up: list[asyncio.DatagramTransport] = []
        self._listeners: list[asyncio.BaseTransport] = []
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self.failed: asyncio.Future[ProxyError] | None = None

    # ---- life cycle -------------------------------------------------------------------------------------------

    async def start(self, v6: bool = True) -> int:
        """Bind UDP and TCP on one free port on 127.0.0.1 (and ::1), connect to the upstreams; return the port."""
        loop = asyncio.get_running_loop()
        self.failed = loop.create_future()
        for host, port in self.upstreams:
            up = _socket(host, socket.SOCK_DGRAM)
            try:
                up.connect((host, port))
            except OSError as exc:
                up.close()
                raise ProxyError(f"cannot use upstream resolver {host}:{port}: {exc.strerror}") from exc
            t, _ = await loop.create_datagram_endpoint(lambda: _UpstreamUdp(self), sock=up)
            self._up.append(t)
        for _ in range(BIND_ATTEMPTS):
            try:
                await self._bind_all(v6)
                break
            except OSError as exc:
                self._close_listeners()
                if exc.errno != errno.EADDRINUSE:
                    raise ProxyError(f"cannot listen for DNS on loopback: {exc}") from exc
        else:
            raise ProxyError(f"no port free on both UDP and TCP after {BIND_ATTEMPTS} attempts")
        self._sweeper = loop.create_task(self._sweep())
        return self.port

    async def _bind_all(self, v6: bool) -> None:
        # Sockets are made here, not from host names, so the event loop never starts resolver threads: the guard
        # stays single-threaded, which keeps its fork of the reaper and of the command safe.
        loop = asyncio.get_running_loop()
        udp = _socket("127.0.0.1", socket.SOCK_DGRAM, ("127.0.0.1", 0))
        self.port = udp.getsockname()[1]
        t, _ = await loop.create_datagram_endpoint(lambda: _ClientUdp(self), sock=udp)
        self._listeners.append(t)
        hosts = ["127.0.0.1", "::1"] if v6 else ["127.0.0.1"]
        for host in hosts:
            if host != "127.0.0.1":
                udp6 = _socket(host, socket.SOCK_DGRAM, (host, self.port))
                t6, _ = await loop.create_datagram_endpoint(lambda: _ClientUdp(self), sock=udp6)
                self._listeners.append(t6)
            tcp = _socket(host, socket.SOCK_STREAM, (host, self.port))
            tcp.listen(1024)
            self._servers.append(await asyncio.start_server(self._serve_tcp, sock=tcp))

    def _close_listeners(self) -> None:
        for t in self._listeners:
            t.close()
        for s in self._servers:
            s.close()
        self._listeners.clear()
        self._servers.clear()

    def close(self) -> None:
        self._close_listeners()
        for t in self._up:
            t.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for task in self._tasks:
            task.cancel()

    def fail(self, reason: str) -> None:
        """Stop answering (guarded DNS now fails) and tell the guard, which kills the run: fail closed."""
        self._close_listeners()
        if self.failed is not None and not self.failed.done():
            self.failed.set_result(ProxyError(f"the DNS proxy failed ({reason}); the run was killed (fail closed)"))

    # ---- the query path ---------------------------------------------------------------------------------------

    def _decide(self, name: str) -> Decision:
        d = self._decisions.get(name)
        if d is None:
            if len(self._decisions) > 50_000:
                self._decisions.clear()
            d = self._decisions[name] = self.policy.decide_name(name)
        return d

    def handle(self, query: bytes, reply: Callable[[bytes], None], protocol: int, client_port: int) -> None:
        """Decide and forward one query; `reply` sends the answer back the way the query came."""
        try:
            q = dnswire.parse_question(query)
        except WireError:
            return  # not DNS we understand: no answer, as a server would for garbage
        self.queries += 1
        if self._crash_after is not None and self.queries > self._crash_after:
            self.fail("fault injected by PHALANX_GUARD_FAULT")
            return
        who = self.attribute(protocol, client_port) if self.attribute is not None else None
        p = _Pending(reply, query, q, self._decide(q.name), who, "udp" if protocol == 17 else "tcp", 0.0, 0)
        if protocol == 6:
            self._spawn(self._forward_tcp(p))
        else:
            self._forward_udp(p)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _random_id(self) -> int:
        """An unpredictable upstream query id (from a batch of os.urandom, so it costs no system call per query)."""
        if not self._id_pool:
            self._id_pool = list(_IDS.unpack(os.urandom(_IDS.size)))
        return self._id_pool.pop()

    def _forward_udp(self, p: _Pending) -> None:
        if len(self._pending) >= 0xF000:
            p.reply(dnswire.error_reply(p.query, p.q, dnswire.RCODE_SERVFAIL))  # ~61,000 queries in flight
            return
        qid = self._random_id()
        while qid in self._pending:
            qid = self._random_id()
        p.sent_at = time.monotonic()
        self._pending[qid] = p
        self._up[p.upstream].sendto(dnswire.with_id(p.query, qid))

    def on_upstream_reply(self, data: bytes) -> None:
        if len(data) < 12 or not data[2] & 0x80:
            return
        qid = int.from_bytes(data[:2], "big")
        p = self._pending.get(qid)
        # A reply must echo the question it answers: a forged one (a guessed id) is dropped, the query stays.
        if p is not None and data[12 : p.q.end] == p.query[12 : p.q.end]:
            del self._pending[qid]
            self._answer(p, dnswire.with_id(data, p.q.qid))

    async def _forward_tcp(self, p: _Pending) -> None:
        host, port = self.upstreams[0]
        try:
            sock = _socket(host, socket.SOCK_STREAM)
            try:
                await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)), UPSTREAM_TIMEOUT_S)
            except BaseException:
                sock.close()
                raise
            reader, writer = await asyncio.open_connection(sock=sock)
            try:
                writer.write(len(p.query).to_bytes(2, "big") + p.query)
                size = int.from_bytes(await asyncio.wait_for(reader.readexactly(2), UPSTREAM_TIMEOUT_S), "big")
                data = await asyncio.wait_for(reader.readexactly(size), UPSTREAM_TIMEOUT_S)
            finally:
                writer.close()
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            self._answer(p, None)
            return
        self._answer(p, data)

    def _answer(self, p: _Pending, upstream_reply: bytes | None) -> None:
        """Learn and publish the answer's addresses, then reply: the map is updated before the client can act.
        A failure here (a map update, the events file) means the policy may no longer hold: fail closed."""
        try:
            self._answer_checked(p, upstream_reply)
        except Exception as exc:
            self.fail(f"{type(exc).__name__}: {exc}")

    def _answer_checked(self, p: _Pending, upstream_reply: bytes | None) -> None:
        if p.quiet:
            p.reply(upstream_reply or dnswire.error_reply(p.query, p.q, dnswire.RCODE_SERVFAIL))
            return
        ans = dnswire.answer(upstream_reply, p.q.name, p.q.end) if upstream_reply else _NO_ANSWER
        # The whole chain is judged: an allowed name that is a CNAME (or DNAME) of a denied one is denied, its
        # addresses join the deny set, and nothing of it is learned as allowed.
        decision = self.policy.decide_chain(p.decision, ans.names) if ans.names else p.decision
        if self.learn is not None and ans.addresses:
            self.learn(p.q.name, ans.addresses, decision)
        verdict: Verdict = "allow"
        if not decision.allowed:
            verdict = "audit" if self.policy.mode == "audit" else "deny"
        if verdict == "deny":
            p.reply(dnswire.error_reply(p.query, p.q, dnswire.RCODE_NXDOMAIN))
        elif upstream_reply is not None:
            p.reply(upstream_reply)
        else:
            p.reply(dnswire.error_reply(p.query, p.q, dnswire.RCODE_SERVFAIL))
        self._record(p, verdict, decision, ans)

    def _record(self, p: _Pending, verdict: Verdict, decision: Decision, ans: dnswire.Answer) -> None:
        who = p.who
        addrs = ans.addresses
        self.sink.emit(
            Event(
                time=rfc3339(time.time()),
                verdict=verdict,
                rule=decision.rule,
                kind="dns",
                name=p.q.name,
                addresses=tuple(dict.fromkeys(a for a, _ in addrs)),
                port=53,
                protocol=p.protocol,
                pid=who.pid if who else None,
                cmdline=who.cmdline if who else (),
                parents=who.parents if who else (),
                comm=who.comm if who else "",
                qtype=dnswire.TYPE_NAMES.get(p.q.qtype, str(p.q.qtype)),
                exe=who.exe if who else "",
                cnames=ans.names,
            )
        )

    async def _sweep(self) -> None:
        """Retry queries an upstream did not answer on the next upstream, then give up with SERVFAIL."""
        while True:
            await asyncio.sleep(UPSTREAM_TIMEOUT_S / 4)
            now = time.monotonic()
            for qid, p in list(self._pending.items()):
                if now - p.sent_at < UPSTREAM_TIMEOUT_S:
                    continue
                if p.upstream + 1 < len(self._up):
                    p.upstream += 1
                    p.sent_at = now
                    self._up[p.upstream].sendto(dnswire.with_id(p.query, qid))
                else:
                    del self._pending[qid]
                    self._answer(p, None)

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = int(writer.get_extra_info("peername")[1])
        try:
            while True:
                size = int.from_bytes(await asyncio.wait_for(reader.readexactly(2), TCP_IDLE_S), "big")
                query = await asyncio.wait_for(reader.readexactly(size), TCP_IDLE_S)
                done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

                def reply(data: bytes, done: asyncio.Future[None] = done) -> None:
                    writer.write(len(data).to_bytes(2, "big") + data)
                    if not done.done():
                        done.set_result(None)

                self.handle(query, reply, 6, port)
                await asyncio.wait_for(done, UPSTREAM_TIMEOUT_S * 2)
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    # ---- the guard's own lookups -----------------------------------------------------------------------------

    async def resolve(self, name: str) -> list[str]:
        """Resolve `name` (A and AAAA) through the upstreams, for the addresses of denied names."""
        out: list[str] = []
        for qtype in (dnswire.TYPE_A, dnswire.TYPE_AAAA):
            labels = b"".join(len(x).to_bytes(1, "big") + x.encode() for x in name.split("."))
            query = b"\x00\x00\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + labels + b"\x00" + qtype.to_bytes(2, "big")
            query += b"\x00\x01"
            fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

            def reply(data: bytes, fut: asyncio.Future[bytes] = fut) -> None:
                if not fut.done():
                    fut.set_result(data)

            q = dnswire.parse_question(query)
            self._forward_udp(_Pending(reply, query, q, Decision(True, "guard lookup", 0), None, "udp", 0.0, 0, True))
            with contextlib.suppress(asyncio.TimeoutError):
                data = await asyncio.wait_for(fut, UPSTREAM_TIMEOUT_S * len(self._up) + 1)
                out += [a for a, _ in dnswire.answer_addresses(data)]
        return out


def _socket(host: str, kind: int, bind: tuple[str, int] | None = None) -> socket.socket:
    """A non-blocking socket of the family of `host` (an IP address), bound if asked; closed on failure."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, kind)
    try:
        sock.setblocking(False)
        if kind == socket.SOCK_STREAM and bind is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if bind is not None:
            sock.bind(bind)
    except BaseException:
        sock.close()
        raise
    return sock
