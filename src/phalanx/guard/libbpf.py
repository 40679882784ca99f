"""Thin ctypes bindings to the few libbpf.so.1 calls the guard uses. Errors come back as errno; callers wrap them
with the step that failed."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from typing import Any

from phalanx.guard.errors import NotSupportedError

__all__ = [
    "BPF_ANY",
    "BPF_F_ALLOW_MULTI",
    "PRINT_FN",
    "SAMPLE_FN",
    "Libbpf",
    "SampleCallback",
    "c_char_p",
    "c_int",
    "c_void_p",
    "errno_text",
    "last_errno",
]

c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int

PRINT_FN = ctypes.CFUNCTYPE(c_int, c_int, c_char_p, c_void_p)
SAMPLE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, ctypes.c_size_t)

BPF_ANY = 0
BPF_F_ALLOW_MULTI = 2

# (name, restype, argtypes)
_SIGNATURES: tuple[tuple[str, Any, list[Any]], ...] = (
    ("libbpf_set_print", c_void_p, [PRINT_FN]),
    ("bpf_object__open_file", c_void_p, [c_char_p, c_void_p]),
    ("bpf_object__load", c_int, [c_void_p]),
    ("bpf_object__close", None, [c_void_p]),
    ("bpf_object__find_map_by_name", c_void_p, [c_void_p, c_char_p]),
    ("bpf_object__find_program_by_name", c_void_p, [c_void_p, c_char_p]),
    ("bpf_map__set_initial_value", c_int, [c_void_p, c_void_p, ctypes.c_size_t]),
    ("bpf_map__reuse_fd", c_int, [c_void_p, c_int]),
    ("bpf_map__fd", c_int, [c_void_p]),
    ("bpf_program__fd", c_int, [c_void_p]),
    ("bpf_program__expected_attach_type", c_int, [c_void_p]),
    ("bpf_program__attach_cgroup", c_void_p, [c_void_p, c_int]),
    ("bpf_program__attach_perf_event", c_void_p, [c_void_p, c_int]),
    ("libbpf_num_possible_cpus", c_int, []),
    ("bpf_obj_get_info_by_fd", c_int, [c_int, c_void_p, ctypes.POINTER(ctypes.c_uint32)]),
    ("bpf_link__destroy", c_int, [c_void_p]),
    ("bpf_link__fd", c_int, [c_void_p]),
    ("bpf_prog_attach", c_int, [c_int, c_int, c_int, ctypes.c_uint]),
    ("bpf_prog_detach2", c_int, [c_int, c_int, c_int]),
    ("bpf_map_update_elem", c_int, [c_int, c_void_p, c_void_p, ctypes.c_uint64]),
    ("bpf_map_lookup_elem", c_int, [c_int, c_void_p, c_void_p]),
    ("bpf_map_delete_elem", c_int, [c_int, c_void_p]),
    ("ring_buffer__new", c_void_p, [c_int, SAMPLE_FN, c_void_p, c_void_p]),
    ("ring_buffer__epoll_fd", c_int, [c_void_p]),
    ("ring_buffer__consume", c_int, [c_void_p]),
    ("ring_buffer__free", None, [c_void_p]),
)


class Libbpf:
    """The loaded library with typed signatures. One per process is enough; it holds no per-run state."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
        except OSError as exc:
            raise NotSupportedError(
                f"libbpf.so.1 cannot be loaded ({exc}); install it (Debian: apt-get install libbpf1)"
            ) from exc
        for name, restype, argtypes in _SIGNATURES:
            fn = getattr(self.lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._libc.vsnprintf.argtypes = [c_char_p, ctypes.c_size_t, c_char_p, c_void_p]
        self.log: list[str] = []
        self._print_cb = PRINT_FN(self._on_print)  # kept alive as long as the library may call it
        self.lib.libbpf_set_print(self._print_cb)

    def _on_print(self, level: int, fmt: bytes | None, args: int | None) -> int:
        # libbpf passes a printf format and a va_list; vsnprintf renders it (the verifier log arrives this way).
        buf = ctypes.create_string_buffer(4096)
        self._libc.vsnprintf(buf, len(buf), fmt, args)
        self.log.append(buf.value.decode(errors="replace"))
        del self.log[:-400]
        return 0

    def take_log(self) -> str:
        text = "".join(self.log)
        self.log.clear()
        return text

    def call(self, name: str, *args: Any) -> Any:
        return getattr(self.lib, name)(*args)


def last_errno() -> int:
    return ctypes.get_errno()


def errno_text(err: int) -> str:
    return f"{os.strerror(abs(err))} (errno {abs(err)})"


SampleCallback = Callable[[int, int, int], int]
