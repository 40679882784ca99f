"""The files users hand to phalanx and get back: UTF-8 text in (a byte-order mark is dropped), reports out, with
errors that name the file (or the flag) and say what is wrong in plain words, never a Python exception's text.

Every input path (Kubernetes objects, simulate clusters and traces) reads through :func:`read_text`, so a missing
file, a directory, a binary file or a Latin-1 file is the same one-line error everywhere. Outputs are checked
before any work (:func:`check_writable`) and written all or nothing (:func:`write_files`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from phalanx.api.errors import InputError

__all__ = ["check_writable", "read_text", "text_problem", "write_files"]


def read_text(path: str, what: str = "") -> str:
    """The text of ``path``. Raises :class:`InputError` (``FILE: cannot read WHAT: reason``) when it cannot be read
    or is not UTF-8."""
    problem = None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        problem = _os_reason(exc)
    else:
        text, problem = _decode(data)
        if problem is None:
            return text
    raise InputError([f"{path}: cannot read{' ' + what if what else ''}: {problem}"])


def text_problem(data: bytes) -> str | None:
    """Why ``data`` is not usable text (None when it is)."""
    return _decode(data)[1]


def _decode(data: bytes) -> tuple[str, str | None]:
    try:
        text = data.decode("utf-8-sig")  # a BOM, as spreadsheet programs write, is not part of the text
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return "", f"not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})"
    if "\x00" in text:
        return "", "a binary file, not text (it contains NUL bytes)"
    return text, None


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.EISDIR:
        return "is a directory"
    return exc.strerror or os.strerror(exc.errno or 0) or "cannot be read"


def check_writable(flag: str, path: str) -> None:
    """Refuse, before any work is done, an output path that cannot be written: its directory is missing, or it
    is a directory itself (``--report: out/r.html: no such directory: out``)."""
    parent = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise InputError([f"{flag}: {path}: is a directory"])
    if not os.path.isdir(parent):
        raise InputError([f"{flag}: {path}: no such directory: {parent}"])
    if not os.access(parent, os.W_OK):
        raise InputError([f"{flag}: {path}: directory {parent} is not writable"])


def write_files(files: dict[str, tuple[str, str]]) -> None:
    """Write every ``path: (flag, text)`` or none: each goes to a temporary file next to it first, and they are
    renamed into place only once all are written, so a failure never leaves a half-written report."""
    done: list[tuple[str, str]] = []
    try:
        for path, (flag, text) in files.items():
            # Next to the target (a rename stays on one file system), created as open() would (the umask applies).
            tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
            try:
                with open(tmp, "x", encoding="utf-8") as f:
                    done.append((tmp, path))
                    f.write(text)
            except OSError as exc:
                raise InputError([f"{flag}: {path}: cannot write: {_os_reason(exc)}"]) from exc
        for tmp, path in done:
            os.replace(tmp, path)
    finally:
        for tmp, _ in done:
            if os.path.exists(tmp):
                os.unlink(tmp)
