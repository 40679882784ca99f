"""Robustness: exit codes, signal forwarding, fail-closed when the proxy dies, a SIGKILLed guard leaving nothing
behind (no stale cgroup, no attached program, no live guarded process), and guards running side by side."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DENIED_IP, OTHER_DNS, Net, denied, guard_args, guarded, require_guard_support
from phalanx.guard import cgroup


def _wait_for(path: Path, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def _run_cgroups() -> set[Path]:
    parent = cgroup.find_root() / cgroup.PARENT
    return {p for p in parent.iterdir() if p.is_dir()} if parent.is_dir() else set()


@pytest.mark.parametrize(
    ("script", "code"),
    [("exit 3", 3), ("kill -TERM $$", 128 + 15), ("/nonexistent/cmd", 127)],
    ids=["exit-code", "killed-by-signal", "inner-not-found"],
)
def test_guard_returns_the_commands_exit_code(guard, script: str, code: int) -> None:
    assert guard(script).returncode == code


def test_command_that_cannot_start(net: Net, tmp_path: Path) -> None:
    require_guard_support()
    not_executable = tmp_path / "deploy.sh"
    not_executable.write_text("echo hi\n")
    not_executable.chmod(0o644)
    for cmd, code in ((["/nonexistent/cmd"], 127), ([str(not_executable)], 126)):
        r = subprocess.run([*guard_args(net), "--", *cmd], capture_output=True, text=True, timeout=60)
        assert r.returncode == code, r.stderr
        assert "cannot start" in r.stderr


def test_sigterm_is_forwarded_to_the_process_group(net: Net, tmp_path: Path) -> None:
    require_guard_support()
    ready = tmp_path / "ready"
    script = f"trap 'echo got-term; exit 5' TERM; touch {ready}; sleep 20 & wait"
    proc = subprocess.Popen([*guard_args(net, "--quiet"), "--", "sh", "-c", script], stdout=subprocess.PIPE, text=True)
    assert _wait_for(ready)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 5 and "got-term" in out


def test_fail_closed_when_the_proxy_dies(guard, net: Net) -> None:
    dig = f"dig +short +time=1 +tries=1 @{OTHER_DNS} allowed.test"
    script = f"{dig}; {dig}; echo second=$?; sleep 20"
    r = guard(script, env={"PHALANX_GUARD_FAULT": "proxy-crash-after=1"})
    assert r.returncode == 74, r.stderr
    assert "the DNS proxy failed" in r.stderr and "fail closed" in r.stderr
    assert r.stdout.count("127.0.0.10") == 1  # the second query got no answer from anywhere


def _attached_prog_ids(path: Path) -> set[int]:
    out = subprocess.run(["bpftool", "-j", "cgroup", "show", str(path)], capture_output=True, text=True, timeout=30)
    return {int(p["id"]) for p in json.loads(out.stdout or "[]")}


def _prog_exists(prog_id: int) -> bool:
    return (
        subprocess.run(["bpftool", "prog", "show", "id", str(prog_id)], capture_output=True, timeout=30).returncode == 0
    )


def test_sigkilled_guard_leaves_nothing_and_next_start_is_clean(net: Net, tmp_path: Path) -> None:
    require_guard_support()
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        guarded(net, f"touch {ready}; exec sleep 30", "--quiet"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_for(ready)
        ours = [p for p in _run_cgroups() if p.name.startswith(f"{proc.pid}-")]
        assert len(ours) == 1
        run_cg = cgroup.RunCgroup(ours[0])
        inside = run_cg.pids()
        assert inside and proc.pid not in inside  # the guard (and its proxy) stay outside the guarded cgroup
        prog_ids = _attached_prog_ids(run_cg.path)
        assert len(prog_ids) == 9  # connect4/6, sendmsg4/6, recvmsg4/6, egress, sock_create, device
    finally:
        proc.kill()
        proc.wait(timeout=10)
    deadline = time.monotonic() + 15
    while (run_cg.path.exists() or any(map(_prog_exists, prog_ids))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not run_cg.path.exists(), "the reaper should remove the cgroup of a killed guard"
    for pid in inside:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not any(map(_prog_exists, prog_ids)), "no program of the killed guard may stay loaded"
    # A stale cgroup left by some other crash is swept by the next start.
    stale = cgroup.find_root() / cgroup.PARENT / "999999999-1-1"
    stale.mkdir()
    r = subprocess.run([*guard_args(net), "--", "true"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not stale.exists()
    assert "removed the stale cgroup" in r.stderr


def test_two_guards_in_parallel_do_not_interfere(net: Net, tmp_path: Path) -> None:
    require_guard_support()
    go = tmp_path / "go"
    script = f"while [ ! -e {go} ]; do sleep 0.02; done; curl -sS -m 5 {net.url('denied.test')}; echo curl=$?"
    strict_events = tmp_path / "a.jsonl"
    a = subprocess.Popen(
        guarded(net, script, "--deny", "denied.test", events=strict_events),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    b = subprocess.Popen(
        guarded(net, script, "--deny", "other.test"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    time.sleep(0.5)  # both are set up and waiting (they poll for the file)
    go.touch()
    out_a, _ = a.communicate(timeout=60)
    out_b, _ = b.communicate(timeout=60)
    assert "curl=6" in out_a
    assert "hello from 127.0.0.20" in out_b and "curl=0" in out_b
    assert os.path.getsize(strict_events) > 0


def test_deny_address_events_carry_pid_of_the_right_process(guard, net: Net) -> None:
    r = guard(f"sh -c 'curl -sS -m 5 {net.url(DENIED_IP)}'; echo $$", "--deny", DENIED_IP)
    ev = denied(r.events, "connect")[0]
    assert ev["cmdline"][0] == "curl"
    # The direct parent is a shell (named by the kernel-captured comm if it has exited already).
    assert ev["parents"][-1]["cmdline"][0] in ("sh", "/bin/sh")


def _session_states(sid: int) -> str:
    """ps of a session, with each process's syscall and signal masks: what a hung terminal test needs to be read."""
    script = (
        f"ps -o pid,ppid,pgid,tpgid,stat,wchan:20,cmd -s {sid}; for p in $(ps -o pid= -s {sid}); do "
        "echo $p $(cat /proc/$p/syscall); grep -E 'SigBlk|SigIgn|SigPnd|ShdPnd' /proc/$p/status; done"
    )
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30).stdout


def test_ctrl_c_on_a_terminal_reaches_the_command(net: Net) -> None:
    """On a terminal the command is the foreground job: it can read input, and Ctrl-C stops it (exit 130)."""
    import select

    require_guard_support()
    primary, secondary = os.openpty()
    cmd = [*guard_args(net, "--quiet"), "--", "sh", "-c", "read x; echo got-$x; sleep 20; echo late"]
    # setsid --ctty: the guard starts as a session leader whose controlling terminal is the pty, as in a shell.
    proc = subprocess.Popen(["setsid", "--ctty", *cmd], stdin=secondary, stdout=secondary, stderr=secondary)
    os.close(secondary)
    out = b""
    try:
        os.write(primary, b"hello\n")
        deadline = time.monotonic() + 20
        while b"got-hello" not in out and time.monotonic() < deadline:
            if select.select([primary], [], [], 0.2)[0]:
                out += os.read(primary, 1024)
        assert b"got-hello" in out
        os.write(primary, b"\x03")
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the guard did not stop after Ctrl-C:\n{_session_states(proc.pid)}") from None
        assert proc.returncode == 130, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(primary)
