"""Unit tests of the layers added against the review's escapes, without root: the seccomp filter (its system-call
tables against the kernel's UAPI headers, and its decisions, run through a small classic-BPF interpreter), the DNS
answer reader (CNAME/DNAME/SVCB chains, compression, pointer loops), the chain decision, the proxy's query ids and
its check of a reply's question, the policy file's error positions, provider ranges, proxy variables, privileges,
the cgroup view's mount list and the tracepoint format."""

from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path

import pytest
from dnslib import CNAME, QTYPE, RR, A, DNSRecord

from phalanx.guard import confine, dnswire, kernel_events, policy, privilege, proxyenv, seccomp, tracepoint
from phalanx.guard.abi import GuardEvent
from phalanx.guard.errors import PolicyError
from phalanx.guard.events import EventSink
from phalanx.guard.proxy import DnsProxy

# ---- seccomp ------------------------------------------------------------------------------------------------

HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "i386": Path("/usr/include/x86_64-linux-gnu/asm/unistd_32.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}


@pytest.mark.parametrize("arch", sorted(seccomp.ARCHES))
def test_system_call_numbers_match_the_kernel_headers(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"{header} is not installed (Debian: linux-libc-dev)")
    numbers = {m[0]: int(m[1]) for m in re.findall(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text())}
    for name, nr in seccomp.ARCHES[arch].calls.items():
        assert numbers[name] == nr, f"{arch} {name}"
    x32 = Path("/usr/include/x86_64-linux-gnu/asm/unistd_x32.h")
    if arch == "x86_64" and x32.exists():
        text = x32.read_text()
        for name, nr in seccomp.ARCHES[arch].aliases:
            assert re.search(rf"#define __NR_{name} \(__X32_SYSCALL_BIT \+ {nr}\)", text), name


def run_filter(code: bytes, nr: int, arch: int, *args: int) -> int:
    """Interpret the classic-BPF filter on one struct seccomp_data (only the opcodes build_filter emits)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *[a & 0xFFFFFFFFFFFFFFFF for a in (*args, 0, 0, 0, 0, 0, 0)[:6]])
    insns = [struct.unpack_from("=HBBI", code, i) for i in range(0, len(code), 8)]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = insns[pc]
        pc += 1
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x54:
            acc &= k
        elif op == 0x15:
            pc += jt if acc == k else jf
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"opcode {op:#x} not expected")


GUARD, REAPER, PGID = 4242, 4243, 4200
X86, I386 = seccomp.ARCHES["x86_64"], seccomp.ARCHES["i386"]
CODE = seccomp.build_filter(X86, (GUARD, REAPER, -PGID))
ALLOW, NOTIFY, KILL = seccomp.RET_ALLOW, seccomp.RET_USER_NOTIF, seccomp.RET_KILL_PROCESS


@pytest.mark.parametrize(
    ("call", "args", "expected"),
    [
        ("socket", (2, 1), ALLOW),  # AF_INET, SOCK_STREAM
        ("socket", (10, 2 | 0x80000), ALLOW),  # AF_INET6, SOCK_DGRAM|SOCK_CLOEXEC
        ("socket", (1, 1), ALLOW),
        ("socket", (17, 3), NOTIFY),  # AF_PACKET
        ("socket", (44, 3), NOTIFY),  # AF_XDP
        ("socket", (2, 10 | 0x80000), NOTIFY),  # AF_INET, SOCK_PACKET: AF_PACKET by another name
        ("kill", (GUARD, 9), NOTIFY),
        ("kill", (REAPER, 9), NOTIFY),
        ("kill", (-PGID, 15), NOTIFY),
        ("kill", (-1, 9), NOTIFY),
        ("kill", (-1 & 0xFFFFFFFF | 0xDEAD00000000, 9), NOTIFY),  # only the low 32 bits are the pid
        ("kill", (1234, 9), ALLOW),
        ("kill", (0, 15), ALLOW),  # its own process group
        ("tgkill", (GUARD, GUARD, 9), NOTIFY),
        ("pidfd_open", (REAPER, 0), NOTIFY),
        ("pidfd_open", (1234, 0), ALLOW),
        ("pidfd_getfd", (3, 4, 0), NOTIFY),
        ("pidfd_send_signal", (3, 9), NOTIFY),
        ("ptrace", (16, 1234), NOTIFY),  # PTRACE_ATTACH
        ("ptrace", (0x4206, 1234), NOTIFY),  # PTRACE_SEIZE
        ("ptrace", (2, 1234), ALLOW),  # PTRACE_PEEKDATA: needs an attach first
        ("setns", (3, 0x40000000), ALLOW),  # CLONE_NEWNET
        ("setns", (3, 0), NOTIFY),
        ("bpf", (0,), NOTIFY),
        ("open_by_handle_at", (3,), NOTIFY),
    ],
)
def test_the_filter_hands_over_exactly_the_escapes(call: str, args: tuple[int, ...], expected: int) -> None:
    assert run_filter(CODE, X86.calls[call], X86.audit, *args) == expected
    if call in I386.calls:  # the 32-bit ABI of the same kernel is judged the same way
        assert run_filter(CODE, I386.calls[call], I386.audit, *args) == expected


def test_x32_and_other_abis() -> None:
    x32 = seccomp.X32_BIT
    assert run_filter(CODE, x32 | X86.calls["socket"], X86.audit, 17, 3) == NOTIFY
    assert run_filter(CODE, x32 | 524, X86.audit, GUARD) == NOTIFY  # x32's own rt_sigqueueinfo
    assert run_filter(CODE, I386.calls["socketcall"], I386.audit, 1) == NOTIFY
    assert run_filter(CODE, 0, seccomp.ARCHES["aarch64"].audit) == KILL  # unknown to this kernel's filter
    assert run_filter(CODE, X86.calls["socket"] + 1, X86.audit, 17) == ALLOW  # any other call: not looked at


def test_notification_layout() -> None:
    raw = struct.pack("=QIIiIQ6Q", 7, 99, 0, seccomp.X32_BIT | 41, X86.audit, 0, 17, 3, 0, 0, 0, 0)
    n = seccomp.Notification.unpack(raw)
    assert (n.id, n.tid, n.nr, n.args[:2]) == (7, 99, 41, (17, 3)) and len(raw) == seccomp.Notification.SIZE


# ---- DNS answers and chains -------------------------------------------------------------------------------


def _reply(name: str, *records: RR) -> bytes:
    reply = DNSRecord.question(name).reply()
    for rr in records:
        reply.add_answer(rr)
    return bytes(reply.pack())


def test_answer_reads_the_whole_chain() -> None:
    data = _reply(
        "alias.example",
        RR("alias.example", QTYPE.CNAME, rdata=CNAME("cdn.Evil.example"), ttl=60),
        RR("cdn.evil.example", QTYPE.CNAME, rdata=CNAME("edge.evil.example"), ttl=60),
        RR("edge.evil.example", QTYPE.A, rdata=A("192.0.2.7"), ttl=30),
    )
    ans = dnswire.answer(data, "alias.example")
    assert ans.names == ("cdn.evil.example", "edge.evil.example") and ans.addresses == [("192.0.2.7", 30)]
    assert dnswire.answer(data) == ans  # the question's name read from the message itself


def test_answer_reads_dname_and_svcb_targets() -> None:
    dname = RR("corp.example", QTYPE.DNAME, rdata=CNAME("evil.example"), ttl=60)
    data = _reply("www.corp.example", dname, RR("www.corp.example", QTYPE.CNAME, rdata=CNAME("www.evil.example")))
    assert set(dnswire.answer(data).names) == {"corp.example", "evil.example", "www.evil.example"}
    svcb = bytes(DNSRecord.question("svc.example", "HTTPS").reply().pack())
    target = b"\x04evil\x07example\x00"
    rdata = b"\x00\x01" + target
    rr = b"\xc0\x0c" + struct.pack("!HHIH", 65, 1, 60, len(rdata)) + rdata
    svcb = svcb[:6] + b"\x00\x01" + svcb[8:] + rr
    assert dnswire.answer(svcb).names == ("evil.example",)


@pytest.mark.parametrize(
    "junk",
    [
        b"\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01\xc0\x1e",  # owner: pointer loop
        b"\x12\x34\x81\x80\x00\x01\x00\x05\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01",  # 5 answers, none there
        b"\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01\xc0",  # half a pointer
    ],
)
def test_malformed_answers_keep_what_was_read(junk: bytes) -> None:
    assert dnswire.answer(junk).addresses == []


def test_a_chain_member_denied_by_name_denies_the_answer() -> None:
    p = policy.build(["*.evil.example"], [])
    q = p.decide_name("alias.example")
    d = p.decide_chain(q, ("cdn.evil.example",))
    assert (d.allowed, d.rule, d.via) == (False, "deny name *.evil.example", "cdn.evil.example")
    assert p.decide_chain(q, ("cdn.fine.example",)) == q
    allow = policy.build(["*.evil.example"], ["pypi.example"])
    q = allow.decide_name("pypi.example")
    assert allow.decide_chain(q, ("x.fastly.example",)).allowed  # allowing a name allows the CDN it points to
    assert not allow.decide_chain(q, ("x.evil.example",)).allowed


class _Upstream:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendto(self, data: bytes) -> None:
        self.sent.append(data)


def test_upstream_ids_are_unpredictable_and_forged_replies_are_dropped() -> None:
    proxy = DnsProxy(policy.build([], []), [("127.0.0.1", 53)], EventSink(quiet=True))
    up = _Upstream()
    proxy._up = [up]  # type: ignore[list-item]
    answered: list[bytes] = []
    client_ids = []
    for i in range(200):
        q = DNSRecord.question(f"n{i}.example")
        client_ids.append(q.header.id)
        proxy.handle(bytes(q.pack()), answered.append, 17, 1000 + i)
    ids = [int.from_bytes(q[:2], "big") for q in up.sent]
    assert len(set(ids)) == len(ids)
    assert sum(b - a == 1 for a, b in itertools.pairwise(ids)) < 5  # not a counter
    query = up.sent[0]
    forged = DNSRecord.question("other.example").reply()
    forged.header.id = ids[0]
    forged.add_answer(RR("other.example", QTYPE.A, rdata=A("192.0.2.66")))
    proxy.on_upstream_reply(bytes(forged.pack()))
    assert answered == []  # a guessed id with another question is not an answer
    real = DNSRecord.parse(query).reply()
    real.add_answer(RR(str(real.q.qname), QTYPE.A, rdata=A("192.0.2.1")))
    proxy.on_upstream_reply(bytes(real.pack()))
    assert len(answered) == 1 and DNSRecord.parse(answered[0]).header.id == client_ids[0]  # the client's own id


# ---- policy files, ranges, proxies, privileges --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (b"mode: enforce\ndeny:\n  - ok.example\n  - 'exa mple'\n", r":4: deny\[1\]: Invalid value: \"exa mple\""),
        (b"upstreams: ['10.0.0.1:99999']\n", r":1: upstreams\[0\]: Invalid value: \"10.0.0.1:99999\": the port"),
        (b"upstreams: ['10.0.0.1:0']\n", r":1: upstreams\[0\]: .*from 1 to 65535"),
        (b"upstreams: ['10.0.0.1:abc']\n", r":1: upstreams\[0\]: .*from 1 to 65535"),
        (b"http_proxy: maybe\n", r":1: http_proxy: Unsupported value: \"maybe\""),
        (b"deny: [caf\xe9.example]\n", r":1: not UTF-8 text \(byte 0xe9"),
        (b"\x00\x01\x02binary", r":1: not a text file"),
        (b"deny: [\n", r":2: not valid YAML"),
        (b"[1, 2]\n", r":1: <root>: Invalid value: a list"),
        (b"strict: 1\n", r":1: strict: Invalid value: 1: must be true or false"),
    ],
)
def test_policy_file_errors_name_file_line_and_field(tmp_path: Path, text: bytes, where: str) -> None:
    f = tmp_path / "p.yaml"
    f.write_bytes(text)
    with pytest.raises(PolicyError, match=re.escape(str(f)) + where):
        policy.load_file(f)


@pytest.mark.parametrize("port", ["99999", "0", "abc", "", "-1", "1e3", "٣"])
def test_upstream_ports_are_checked(port: str) -> None:
    with pytest.raises(PolicyError, match=r"^--upstream\[0\]: Invalid value: .*the port must be a number from 1"):
        policy.build([], [], upstreams=[f"10.0.0.1:{port}"])
    with pytest.raises(PolicyError, match=r"the port must be a number from 1 to 65535|expected \[IPV6\]:PORT"):
        policy.parse_upstream(f"[::1]:{port}")


def test_provider_ranges_from_text_and_json(tmp_path: Path) -> None:
    txt = tmp_path / "r.txt"
    txt.write_text("# ranges\n140.82.112.0/20\n\n2001:db8::/32  # v6\n")
    meta = tmp_path / "meta.json"
    meta.write_text('{"web": ["140.82.112.0/20"], "api": ["192.30.252.0/22"], "ssh_keys": ["ssh-ed25519 AAAA"]}')
    p = policy.build(["github.com"], [], deny_ranges=[str(txt), f"{meta}#api"])
    assert [str(n) for n, _ in p.deny_ranges] == ["140.82.112.0/20", "2001:db8::/32", "192.30.252.0/22"]
    assert p.rule_text(p.rule_id(f"deny range 192.30.252.0/22 ({meta}#api)")).startswith("deny range")
    with pytest.raises(PolicyError, match=re.escape(f"{meta}: no key 'nope' (keys: api, ssh_keys, web)")):
        policy.build([], [], deny_ranges=[f"{meta}#nope"])
    bad = tmp_path / "bad.txt"
    bad.write_text("10.0.0.0/8\nnot-a-cidr\n")
    with pytest.raises(PolicyError, match=re.escape(f"{bad}:2: Invalid value: 'not-a-cidr'")):
        policy.build([], [], deny_ranges=[str(bad)])
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text("deny_ranges: [r.txt]\n")  # relative to the policy file
    assert len(policy.merge(policy.load_file(policy_file)).deny_ranges) == 2


def test_proxy_variables() -> None:
    env = {"https_proxy": "http://proxy.corp.example:3128", "HTTP_PROXY": "10.1.2.3:8080", "no_proxy": "x", "PATH": "/"}
    found = proxyenv.find(env)
    assert [(s.var, s.host, s.port) for s in found] == [
        ("https_proxy", "proxy.corp.example", 3128),
        ("HTTP_PROXY", "10.1.2.3", 8080),
    ]
    assert proxyenv.deny_entries(found) == ["proxy.corp.example", "10.1.2.3/32"]
    assert set(proxyenv.environment(env, "deny")) == {"no_proxy", "PATH"}
    assert proxyenv.environment(env, "warn") == env
    assert [e.verdict for e in proxyenv.events(found, "warn")] == ["audit", "audit"]


def test_capabilities_and_users() -> None:
    drop = privilege.parse_caps([])
    assert privilege.CAPS["sys_admin"] in drop and privilege.CAPS["dac_override"] not in drop
    assert privilege.CAPS["net_raw"] not in privilege.parse_caps(["CAP_NET_RAW"])
    assert privilege.parse_caps(["all"]) == frozenset()
    with pytest.raises(PolicyError, match=r"--keep-cap\[1\]: 'net_rwa' is not a capability"):
        privilege.parse_caps(["bpf", "net_rwa"])
    nobody = privilege.parse_user("nobody")
    assert nobody.uid == 65534 and privilege.parse_user("65534").name == nobody.name
    with pytest.raises(PolicyError, match="--user: no such user"):
        privilege.parse_user("no-such-user-here")
    with pytest.raises(PolicyError, match="--user: no such group"):
        privilege.parse_user("nobody:no-such-group-here")


def test_cgroup2_mounts_from_mountinfo() -> None:
    info = (
        "25 1 0:22 / /sys/fs/cgroup rw,relatime shared:9 - tmpfs tmpfs rw\n"
        "30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
        "31 25 0:27 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu\n"
        "40 1 0:26 / /mnt/with\\040space rw - cgroup2 cgroup2 rw\n"
    )
    assert confine.cgroup2_mounts(info) == ["/sys/fs/cgroup/unified", "/mnt/with space"]


def test_tracepoint_format() -> None:
    fmt = (
        "name: cgroup_attach_task\nID: 538\nformat:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:int dst_root;\toffset:8;\tsize:4;\tsigned:1;\n"
        "\tfield:u64 dst_id;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\tfield:__data_loc char[] dst_path;\toffset:28;\tsize:4;\tsigned:0;\n"
        "\tfield:char comm[16];\toffset:32;\tsize:16;\tsigned:0;\n"
    )
    tp = tracepoint.parse_format("538\n", fmt)
    assert tp.id == 538 and tp.offsets == {"common_type": 0, "dst_root": 8, "dst_id": 16, "dst_path": 28, "comm": 32}


def test_executable_path_from_the_kernel_walk() -> None:
    raw = GuardEvent()
    for i, part in enumerate((b"curl", b"bin", b"usr")):
        raw.exe[i].value = part
    raw.exe_parts = 3
    assert kernel_events.kernel_exe(raw) == "/usr/bin/curl"
    raw.exe_parts = 9  # longer than the kernel keeps
    for i in range(8):
        raw.exe[i].value = b"d"
    assert kernel_events.kernel_exe(raw).startswith(".../d/")
    raw.exe_parts = 0
    assert kernel_events.kernel_exe(raw) == ""
