"""ctypes mirrors of the structs in bpf/guard.h, shared with the eBPF programs (a test checks the layouts match)."""

from __future__ import annotations

import ctypes

__all__ = [
    "ARGS_LEN",
    "FIRST_POLICY_RULE",
    "HOOK_CONNECT",
    "HOOK_EGRESS",
    "HOOK_SENDMSG",
    "RULE_LEARNED",
    "RULE_LOOPBACK",
    "RULE_NONE",
    "RULE_STRICT",
    "VERDICT_ALLOW",
    "VERDICT_AUDIT",
    "VERDICT_DENY",
    "GuardConfig",
    "GuardEvent",
    "Learned",
    "Lpm4Key",
    "Lpm6Key",
    "OrigDst",
    "Owner",
    "PortKey",
]

ARGS_LEN = 256

VERDICT_ALLOW = 0
VERDICT_DENY = 1
VERDICT_AUDIT = 2

HOOK_CONNECT = 1
HOOK_SENDMSG = 2
HOOK_EGRESS = 3

RULE_NONE = 0
RULE_LOOPBACK = 1
RULE_STRICT = 2
RULE_LEARNED = 3
FIRST_POLICY_RULE = 16


class GuardConfig(ctypes.Structure):
    _fields_ = (
        ("proxy_ip4", ctypes.c_uint32),
        ("proxy_port", ctypes.c_uint16),
        ("audit", ctypes.c_uint8),
        ("strict", ctypes.c_uint8),
        ("allow_loopback", ctypes.c_uint8),
        ("report_allowed", ctypes.c_uint8),
        ("proxy_v6", ctypes.c_uint8),
        ("pad", ctypes.c_uint8),
    )


class Lpm4Key(ctypes.Structure):
    _fields_ = (("prefixlen", ctypes.c_uint32), ("addr", ctypes.c_uint8 * 4))


class Lpm6Key(ctypes.Structure):
    _fields_ = (("prefixlen", ctypes.c_uint32), ("addr", ctypes.c_uint8 * 16))


class Learned(ctypes.Structure):
    _fields_ = (("expires_ns", ctypes.c_uint64), ("rule", ctypes.c_uint32), ("pad", ctypes.c_uint32))


class Owner(ctypes.Structure):
    _fields_ = (("pid", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("comm", ctypes.c_char * 16))


class OrigDst(ctypes.Structure):
    _fields_ = (
        ("addr", ctypes.c_uint8 * 16),
        ("port", ctypes.c_uint16),
        ("family", ctypes.c_uint8),
        ("pad", ctypes.c_uint8),
    )


class PortKey(ctypes.Structure):
    _fields_ = (("port", ctypes.c_uint16), ("protocol", ctypes.c_uint8), ("pad", ctypes.c_uint8))


class GuardEvent(ctypes.Structure):
    _fields_ = (
        ("ts_ns", ctypes.c_uint64),
        ("cookie", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("ppid", ctypes.c_uint32),
        ("rule", ctypes.c_uint32),
        ("port", ctypes.c_uint16),
        ("family", ctypes.c_uint8),
        ("protocol", ctypes.c_uint8),
        ("verdict", ctypes.c_uint8),
        ("hook", ctypes.c_uint8),
        ("pad", ctypes.c_uint8 * 6),
        ("addr", ctypes.c_uint8 * 16),
        ("comm", ctypes.c_char * 16),
        ("parent_comm", ctypes.c_char * 16),
        ("args", ctypes.c_uint8 * ARGS_LEN),  # bytes, NUL separated: c_char would stop at the first NUL
    )
