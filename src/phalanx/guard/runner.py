"""Runs one guarded command: preflight checks, the run's cgroup, the DNS proxy, the eBPF programs and their
maps, the reaper, then the command itself (launch.py: confined, filtered, with capabilities dropped); waits for it
while serving DNS, kernel events, the seccomp supervisor and the integrity watch, and tears everything down in
reverse on every path. The guard and its proxy stay outside the guarded cgroup."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from phalanx.guard import cgroup, launch, privilege, procinfo, proxyenv, reaper, seccomp, tracepoint
from phalanx.guard.abi import (
    COUNT_HELD_ALLOWED,
    COUNT_LOST_ALLOWED,
    COUNT_LOST_DENIED,
    COUNT_REPEAT_DENIED,
    HOOK_CGROUP,
    RULE_LEARNED,
    GuardConfig,
    GuardEvent,
)
from phalanx.guard.errors import CgroupError, CommandStartError, GuardError, NotSupportedError
from phalanx.guard.events import EventSink
from phalanx.guard.kernel_events import Decoder, cgroup_move
from phalanx.guard.libbpf import SAMPLE_FN, Libbpf
from phalanx.guard.loader import Programs, load_and_attach
from phalanx.guard.maps import PolicyMaps
from phalanx.guard.policy import Decision, Policy, parse_upstream
from phalanx.guard.proxy import DnsProxy, Who
from phalanx.guard.supervisor import Supervisor
from phalanx.guard.watch import Integrity, Tamper

__all__ = ["RunOptions", "environment_warnings", "preflight", "run", "system_upstreams"]

TTL_FLOOR_S = 60.0  # short TTLs would expire an address between the answer and a slow script's connect
TTL_GRACE_S = 30.0
MAX_LEARNED_PER_ANSWER = 64  # a name with thousands of addresses (object stores) must not flood the maps
WHO_CACHE_S = 0.5  # how long a process snapshot is reused for further queries from the same pid and comm
FAULT_ENV = "PHALANX_GUARD_FAULT"  # test-only fault injection: "proxy-crash-after=N"
LISTENER_WAIT_S = 10.0
DFL_HIERARCHY = 0  # cgroup v2's hierarchy id; the tracepoint also reports v1 moves, which BPF ignores
UNREPORTED = {
    COUNT_LOST_DENIED: "lost denials",
    COUNT_LOST_ALLOWED: "lost allowed connects",
    COUNT_HELD_ALLOWED: "allowed connects not reported to keep room for denials",
    COUNT_REPEAT_DENIED: "repeated denials (same process, address and port as one reported)",
}


@dataclass(frozen=True)
class RunOptions:
    command: tuple[str, ...]
    policy: Policy
    events_path: Path | None = None
    quiet: bool = False
    report_allowed: bool = True
    privileges: privilege.Privileges = field(default_factory=lambda: privilege.Privileges(privilege.parse_caps([])))
    env: dict[str, str] | None = None  # the command's environment (default: the guard's)


def preflight() -> Path:
    """Refuse early, with the reason and the fix, when this machine cannot guard; return the cgroup v2 root."""
    if os.geteuid() != 0:
        raise NotSupportedError(
            "the guard needs root (to create a cgroup and attach eBPF programs to it); run it with sudo"
        )
    root = cgroup.find_root()
    if cgroup.own_cgroup().strip("/").startswith(cgroup.PARENT):
        raise NotSupportedError(
            "the guard is itself running inside a guarded cgroup; nested guards would put the proxy under guard"
        )
    for warning in environment_warnings():
        print(f"phalanx guard: warning: {warning}", file=sys.stderr)
    return root


def environment_warnings(nsswitch: Path = Path("/etc/nsswitch.conf"), mounts: Path = Path("/proc/mounts")) -> list[str]:
    """Conditions that weaken the guard without stopping it; said once at start so nobody is surprised."""
    out = []
    try:
        hosts = [line for line in nsswitch.read_text().splitlines() if line.strip().startswith("hosts:")]
    except OSError:
        hosts = []
    if hosts and "resolve" in hosts[0].split()[1:]:
        out.append(
            "nsswitch.conf resolves names through systemd-resolved (IPC, not port 53), so those lookups bypass "
            "the DNS proxy; denied addresses are still refused, and --strict refuses everything not learned"
        )
    release = tuple(int(x) for x in os.uname().release.split(".")[:2] if x.isdigit())
    try:
        v1 = {
            opt for line in mounts.read_text().splitlines() if " cgroup " in line for opt in line.split()[3].split(",")
        }
    except OSError:
        v1 = set()
    if release < (5, 15) and v1 & {"net_cls", "net_prio"}:
        out.append(
            "net_cls/net_prio cgroup v1 controllers are mounted on a kernel older than 5.15: sockets tagged by them "
            "fall back to the root cgroup v2 and escape the guard's programs (fixed upstream in 5.15)"
        )
    return out


def system_upstreams(resolv_conf: Path = Path("/etc/resolv.conf")) -> list[tuple[str, int]]:
    try:
        lines = resolv_conf.read_text().splitlines()
    except OSError:
        return []
    return [(f.split()[1], 53) for f in lines if f.startswith("nameserver") and len(f.split()) > 1]


def _ip4_be(text: str) -> int:
    return int.from_bytes(socket.inet_aton(text), "little")  # network order, as a native u32 holds it


def _port_be(port: int) -> int:
    return int.from_bytes(port.to_bytes(2, "big"), "little")


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def _fault_crash_after() -> int | None:
    spec = os.environ.get(FAULT_ENV, "")
    if spec.startswith("proxy-crash-after="):
        return int(spec.partition("=")[2])
    return None


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _warn(message: str) -> None:
    print(f"phalanx guard: warning: {message}", file=sys.stderr)


class _Run:
    """State of one guarded run, alive for the duration of the asyncio loop."""

    def __init__(self, options: RunOptions, lib: Libbpf, cg: cgroup.RunCgroup, sink: EventSink) -> None:
        self.options = options
        self.policy = options.policy
        self.lib = lib
        self.cg = cg
        self.sink = sink
        self.maps: PolicyMaps | None = None
        self.names: dict[str, str] = {}  # address -> the name it was learned from, to name connect events
        self.stop_pids = frozenset({os.getpid()})
        self.run_path = "/" + str(cg.path.relative_to(cgroup.find_root()))
        self.decoder = Decoder(self.policy.rule_text, self.names, self.stop_pids)
        self.rb = 0
        self._sample_cb = SAMPLE_FN(self._on_sample)
        self._who_cache: dict[tuple[int, str], tuple[Who, float]] = {}
        self._child_pid: int | None = None
        self._early_signals: list[signal.Signals] = []
        self.tampered: asyncio.Future[Tamper] | None = None
        self.integrity = Integrity(lib, self.run_path, lambda: self._child_pid, self._stop_tampered, sink.emit,
                                   self.stop_pids)  # fmt: skip

    # ---- attribution and learning, called by the proxy ------------------------------------------------------

    def attribute(self, protocol: int, port: int) -> Who | None:
        owner = self.maps.client(protocol, port) if self.maps is not None else None
        if owner is None:
            return None
        # A busy client (a resolver loop) would otherwise cost several /proc reads per query. An exec changes the
        # comm the kernel reports, which changes the key, so a cached snapshot never outlives its program.
        key = (owner.pid, owner.comm)
        now = time.monotonic()
        hit = self._who_cache.get(key)
        if hit is not None and hit[1] > now:
            return hit[0]
        argv, parents = procinfo.snapshot(owner.pid, self.stop_pids, fallback=owner.comm)
        who = Who(owner.pid, owner.comm, argv, parents, procinfo.exe(owner.pid))
        if len(self._who_cache) > 4096:
            self._who_cache.clear()
        self._who_cache[key] = (who, now + WHO_CACHE_S)
        return who

    def learn(self, name: str, addrs: list[tuple[str, int]], decision: Decision) -> None:
        if self.maps is None:
            return
        if decision.allowed:
            addrs = addrs[:MAX_LEARNED_PER_ANSWER]  # denied names keep every address: those are all refused
        for addr, ttl in addrs:
            self.names[addr] = name
            if not decision.allowed:
                self.maps.put_cidr("deny", ipaddress.ip_network(addr), decision.rule_id)
            elif self.policy.strict:
                ip = ipaddress.ip_address(addr)
                self.maps.learn(ip, decision.rule_id or RULE_LEARNED, max(ttl, TTL_FLOOR_S) + TTL_GRACE_S)

    # ---- kernel events --------------------------------------------------------------------------------------

    def _on_sample(self, _ctx: int, data: int, size: int) -> int:
        try:
            raw = GuardEvent.from_buffer_copy(ctypes.string_at(data, min(size, ctypes.sizeof(GuardEvent))))
            if raw.hook == HOOK_CGROUP:
                move = cgroup_move(raw)
                if move.dst_root == DFL_HIERARCHY:
                    self.integrity.on_move(move)
            else:
                self.sink.emit(self.decoder.event(raw))
        except Exception as exc:  # an exception must not unwind through libbpf's C frames
            print(f"phalanx guard: dropped a kernel event: {exc!r}", file=sys.stderr)
        return 0

    def drain(self) -> None:
        if self.rb:
            self.lib.call("ring_buffer__consume", self.rb)

    def _stop_tampered(self, t: Tamper) -> None:
        """The first integrity breach: kill the run now (the future wakes the wait, which reports it)."""
        self.cg.kill()
        if self.tampered is not None and not self.tampered.done():
            self.tampered.set_result(t)

    # ---- the run --------------------------------------------------------------------------------------------

    def _watch_tracepoint(self) -> tracepoint.Tracepoint | None:
        try:
            tp = tracepoint.read("cgroup", "cgroup_attach_task")
            missing = {"dst_root", "dst_level", "dst_id", "pid", "dst_path"} - set(tp.offsets)
            if missing:
                raise NotSupportedError(f"its format lacks {', '.join(sorted(missing))}")
        except NotSupportedError as exc:
            _warn(f"processes moved out of the run's cgroup are refused by its view, but not detected: {exc}")
            return None
        return tp

    async def _setup(self, proxy: DnsProxy, teardown: contextlib.ExitStack) -> Programs:
        loop = asyncio.get_running_loop()
        port = await proxy.start(v6=_has_ipv6_loopback())
        tp = self._watch_tracepoint()
        offsets = tp.offsets if tp is not None else {}
        config = GuardConfig(
            proxy_ip4=_ip4_be("127.0.0.1"),
            proxy_port=_port_be(port),
            audit=int(self.policy.mode == "audit"),
            strict=int(self.policy.strict),
            allow_loopback=int(self.policy.allow_loopback),
            report_allowed=int(self.options.report_allowed),
            proxy_v6=int(_has_ipv6_loopback()),
            tp_pid_off=offsets.get("pid", 0),
            tp_dst_id_off=offsets.get("dst_id", 0),
            tp_dst_level_off=offsets.get("dst_level", 0),
            tp_dst_path_off=offsets.get("dst_path", 0),
            tp_dst_root_off=offsets.get("dst_root", 0),
        )
        cg_fd = self.cg.open_fd()
        try:
            programs = load_and_attach(self.lib, config, cg_fd, tp)
        finally:
            os.close(cg_fd)  # the links hold the cgroup now
        teardown.callback(programs.close)
        for note in programs.fallback_log:
            print(f"phalanx guard: {note}", file=sys.stderr)
        self.maps = PolicyMaps(self.lib, programs.map_fds)
        await self._write_policy(self.maps, proxy)
        self.rb = self.lib.call("ring_buffer__new", programs.map_fds["events"], self._sample_cb, None, None) or 0
        if not self.rb:
            raise GuardError("creating the event ring buffer failed")
        teardown.callback(self._close_ring_buffer, loop)
        loop.add_reader(self.lib.call("ring_buffer__epoll_fd", self.rb), self.drain)
        return programs

    async def _write_policy(self, maps: PolicyMaps, proxy: DnsProxy) -> None:
        for net in self.policy.deny_cidrs:
            maps.put_cidr("deny", net, self.policy.rule_id(f"deny cidr {net}"))
        for net in self.policy.allow_cidrs:
            maps.put_cidr("allow", net, self.policy.rule_id(f"allow cidr {net}"))
        for net, source in self.policy.deny_ranges:
            maps.put_cidr("deny", net, self.policy.rule_id(f"deny range {net} ({source})"))
        # Resolve exact denied names now, so /etc/hosts and hard-coded copies of the addresses the resolver gives
        # are refused from the first connect (other addresses of the same host need deny_ranges or --strict).
        exact = [r.pattern for r in self.policy.deny_names if not r.pattern.startswith("*.")]
        for name, addrs in zip(exact, await asyncio.gather(*(proxy.resolve(n) for n in exact)), strict=True):
            self.learn(name, [(a, 0) for a in addrs], self.policy.decide_name(name))

    def _forward(self, sig: signal.Signals) -> None:
        """SIGINT/SIGTERM/SIGHUP to the guard go to the command's whole process group."""
        if self._child_pid is None:
            self._early_signals.append(sig)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._child_pid, sig)

    def _seccomp_filter(self, reaper_pid: int) -> bytes | None:
        try:
            arch = seccomp.native_arch()
        except NotSupportedError as exc:
            _warn(f"no seccomp filter for the run ({exc}): packet sockets and attacks on the guard are not refused")
            return None
        return seccomp.build_filter(arch, (os.getpid(), reaper_pid, -os.getpgrp()))

    def _spawn(self, terminal: int | None, reaper_pid: int) -> tuple[subprocess.Popen[bytes], int | None]:
        """Start the command (see launch.py); returns it and the seccomp listener fd."""
        code = self._seccomp_filter(reaper_pid)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) if code else (None, None)
        err_r, err_w = os.pipe()
        setup = launch.ChildSetup(self.cg.procs, self.options.privileges, True, code, theirs, terminal)
        env = self.options.env
        try:
            # Its own process group lets signals reach all of it; it takes the terminal, if we had it, before exec.
            proc = subprocess.Popen(
                self.options.command, preexec_fn=partial(_child_main, setup, err_w), process_group=0, env=env
            )
        except FileNotFoundError as exc:
            raise CommandStartError(f"cannot start {self.options.command[0]!r}: command not found", 127) from exc
        except subprocess.SubprocessError as exc:
            os.close(err_w)
            reason = os.read(err_r, 4096).decode(errors="replace") or str(exc)
            raise CgroupError(f"cannot start the command inside its cgroup {self.cg.path}: {reason}") from exc
        except OSError as exc:  # not executable, not a program: what a shell reports as 126
            raise CommandStartError(f"cannot start {self.options.command[0]!r}: {exc.strerror}", 126) from exc
        finally:
            for fd in (err_r, err_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if theirs is not None:
                theirs.close()
        listener = None
        if mine is not None:
            with mine:
                mine.settimeout(LISTENER_WAIT_S)
                _, fds, _, _ = socket.recv_fds(mine, 1, 1)
                listener = fds[0] if fds else None
        return proc, listener

    def _start_supervisor(self, listener: int, reaper_pid: int, teardown: contextlib.ExitStack) -> None:
        loop = asyncio.get_running_loop()
        sup = Supervisor(
            listener,
            (os.getpid(), reaper_pid, -os.getpgrp()),
            self.run_path,
            self.sink.emit,
            audit=self.policy.mode == "audit",
            stop_pids=self.stop_pids,
        )
        loop.add_reader(listener, sup.on_readable)
        teardown.callback(sup.close)
        teardown.callback(loop.remove_reader, listener)

    def _proxy_settings(self) -> None:
        settings = proxyenv.find(os.environ)  # where the command's environment came from (before `deny` strips it)
        for e in proxyenv.events(settings, self.policy.http_proxy):
            self.sink.emit(e)
        if settings and self.policy.http_proxy == "warn":
            _warn(
                f"{', '.join(s.var for s in settings)} set: a forward proxy outside the run fetches what the command "
                "asks it to, and the guard sees only the proxy's address; --http-proxy-policy deny makes clients go "
                "direct, where every name is checked"
            )

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        self.tampered = loop.create_future()
        upstreams = [parse_upstream(u) for u in self.policy.upstreams] or system_upstreams()
        proxy = DnsProxy(
            self.policy,
            upstreams,
            self.sink,
            attribute=self.attribute,
            learn=self.learn,
            crash_after=_fault_crash_after(),
        )
        # Teardown runs in reverse on every path, each step even if an earlier one failed: signal handlers, the
        # cgroup (killed and removed while the programs still guard it), the reaper, events, programs, proxy.
        with contextlib.ExitStack() as teardown:
            teardown.callback(proxy.close)
            programs = await self._setup(proxy, teardown)
            self._proxy_settings()
            link_fds = [self.lib.call("bpf_link__fd", link) for link in programs.links]
            reap = reaper.start(self.cg.path, link_fds)
            teardown.callback(reap.stop)
            teardown.callback(_remove_quietly, self.cg)
            # Signals are caught before the command exists, so none can hit the guard unhandled at start.
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._forward, sig)
                teardown.callback(loop.remove_signal_handler, sig)
            terminal = _owned_terminal()
            teardown.callback(_take_terminal_back, terminal)
            proc, listener = self._spawn(terminal, reap.pid)
            self._child_pid = proc.pid
            if listener is not None:
                self._start_supervisor(listener, reap.pid, teardown)
            _give_terminal(terminal, proc.pid)
            for sig in self._early_signals:
                self._forward(sig)
            return await self._wait(proc, proxy, programs, reap)
        raise AssertionError("unreachable")  # for mypy: the with block always returns or raises

    async def _wait(
        self, proc: subprocess.Popen[bytes], proxy: DnsProxy, programs: Programs, reap: reaper.Reaper
    ) -> int:
        """Wait for the command, the proxy to fail, or the guard's integrity to break (then kill the run)."""
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()
        pidfd = os.pidfd_open(proc.pid)
        reaper_fd = os.pidfd_open(reap.pid)
        loop.add_reader(pidfd, _resolve, exited)
        loop.add_reader(reaper_fd, self.integrity.reaper_died)
        checker = loop.create_task(self._check_links(programs))
        try:
            assert proxy.failed is not None and self.tampered is not None
            waiters: list[asyncio.Future[Any]] = [exited, proxy.failed, self.tampered]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            checker.cancel()
            for fd in (pidfd, reaper_fd):
                loop.remove_reader(fd)
                os.close(fd)
        if proxy.failed.done() or self.tampered.done():
            self.cg.kill()
            proc.wait(timeout=10)
            self.drain()
            raise proxy.failed.result() if proxy.failed.done() else self.integrity.error()
        code = _exit_code(proc.wait())
        # Anything the command left running (daemons) would go on unguarded: it stops with the run.
        self.cg.kill()
        await asyncio.sleep(0)
        self.drain()
        if self.tampered.done():
            raise self.integrity.error()
        return code

    async def _check_links(self, programs: Programs) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.integrity.check_links(programs.links)

    def _close_ring_buffer(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.rb:
            return
        with contextlib.suppress(Exception):
            loop.remove_reader(self.lib.call("ring_buffer__epoll_fd", self.rb))
        self.drain()
        if self.maps is not None:
            counts = self.maps.counters()
            self.sink.unreported = {UNREPORTED[i]: counts[i] for i in sorted(UNREPORTED) if counts[i]}
        self.lib.call("ring_buffer__free", self.rb)
        self.rb = 0


def _child_main(setup: launch.ChildSetup, err_w: int) -> None:
    """preexec_fn: Popen only says 'Exception occurred in preexec_fn', so the reason goes to the guard first."""
    try:
        launch.child_setup(setup)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(err_w, f"{exc}".encode()[:4000])
        raise


def _owned_terminal() -> int | None:
    """The terminal's fd if the guard is its foreground job: the command then takes it over, as a shell's
    foreground job does, so that the script can read from it and Ctrl-C reaches it."""
    try:
        fd = sys.stdin.fileno()
        return fd if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp() else None
    except (OSError, ValueError):
        return None


def _give_terminal(fd: int | None, pgid: int) -> None:
    """The parent's half of the hand-over, as shells do it: set the foreground group too (whichever of parent and
    child runs first wins the race harmlessly), then continue the group in case a read stopped it in between."""
    if fd is None:
        return
    with contextlib.suppress(OSError), launch.ignoring(signal.SIGTTOU):
        os.tcsetpgrp(fd, pgid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGCONT)


def _take_terminal_back(fd: int | None) -> None:
    if fd is None:
        return
    with contextlib.suppress(OSError), launch.ignoring(signal.SIGTTOU):  # we are a background group by now
        os.tcsetpgrp(fd, os.getpgrp())


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _event_loop_run(main: Coroutine[Any, Any, int]) -> int:
    """uvloop when installed (the proxy answers about twice as many queries per second), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def run(options: RunOptions, sink: EventSink) -> int:
    """Run the command under guard; returns its exit code (128+N if killed by signal N). Raises GuardError."""
    root = preflight()
    for stale in cgroup.sweep_stale(root):
        print(f"phalanx guard: removed the stale cgroup of a dead guard: {stale}", file=sys.stderr)
    lib = Libbpf()
    cg = cgroup.create_run(root)
    try:
        return _event_loop_run(_Run(options, lib, cg, sink).main())
    finally:
        _remove_quietly(cg)


def _remove_quietly(cg: cgroup.RunCgroup) -> None:
    """A cgroup that will not go away (a process stuck in the kernel) must not replace the command's exit code:
    it is already killed and its programs detach with the guard; say so, and the next start sweeps it."""
    try:
        cg.remove()
    except CgroupError as exc:
        print(f"phalanx guard: warning: {exc}", file=sys.stderr)
