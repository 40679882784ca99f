"""ctypes mirrors of the structs in bpf/guard.h, shared with the eBPF programs (a test checks the layouts match)."""

from __future__ import annotations

import ctypes

__all__ = [
    "ARGS_LEN",
    "COUNT_HELD_ALLOWED",
    "COUNT_LOST_ALLOWED",
    "COUNT_LOST_DENIED",
    "COUNT_MAX",
    "COUNT_REPEAT_DENIED",
    "EXE_PARTS",
    "EXE_PART_LEN",
    "FIRST_POLICY_RULE",
    "HOOK_CGROUP",
    "HOOK_CONNECT",
    "HOOK_DEVICE",
    "HOOK_EGRESS",
    "HOOK_SENDMSG",
    "RULE_CGROUP",
    "RULE_DEVICE",
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
EXE_PARTS = 8
EXE_PART_LEN = 32

VERDICT_ALLOW = 0
VERDICT_DENY = 1
VERDICT_AUDIT = 2

HOOK_CONNECT = 1
HOOK_SENDMSG = 2
HOOK_EGRESS = 3
HOOK_DEVICE = 4
HOOK_CGROUP = 5

RULE_NONE = 0
RULE_LOOPBACK = 1
RULE_STRICT = 2
RULE_LEARNED = 3
RULE_DEVICE = 4
RULE_CGROUP = 5
FIRST_POLICY_RULE = 16

COUNT_LOST_DENIED = 0
COUNT_LOST_ALLOWED = 1
COUNT_HELD_ALLOWED = 2
COUNT_REPEAT_DENIED = 3
COUNT_MAX = 4


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
        ("tp_pid_off", ctypes.c_uint16),
        ("tp_dst_id_off", ctypes.c_uint16),
        ("tp_dst_level_off", ctypes.c_uint16),
        ("tp_dst_path_off", ctypes.c_uint16),
        ("tp_dst_root_off", ctypes.c_uint16),
        ("pad2", ctypes.c_uint16 * 3),
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
        ("dev_major", ctypes.c_uint16),
        ("dev_minor", ctypes.c_uint16),
        ("exe_parts", ctypes.c_uint8),
        ("pad", ctypes.c_uint8 * 5),
        ("addr", ctypes.c_uint8 * 16),
        ("comm", ctypes.c_char * 16),
        ("parent_comm", ctypes.c_char * 16),
        ("args", ctypes.c_uint8 * ARGS_LEN),  # bytes, NUL separated: c_char would stop at the first NUL
        ("exe", (ctypes.c_char * EXE_PART_LEN) * EXE_PARTS),
    )
