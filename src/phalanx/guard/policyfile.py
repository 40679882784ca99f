"""Reading a guard policy file: YAML composed node by node, so that every mistake is reported as
`FILE:LINE: FIELD.PATH: message` in Kubernetes' words (Invalid value, Unsupported value, Duplicate value, ...),
and a file that is not UTF-8 text, not YAML or not a mapping is an error naming the file, never a traceback."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from phalanx.guard.errors import PolicyError

__all__ = ["FIELDS", "Located", "PolicyFile", "load", "quote"]

MAX_BYTES = 16 << 20
_SIMPLE_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")
FIELDS = ("mode", "strict", "allow_loopback", "deny", "allow", "deny_ranges", "upstreams", "http_proxy")


def _escape(c: str) -> str:
    if c in '"\\':
        return "\\" + c
    if c.isprintable():
        return c
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
    )


def quote(value: object) -> str:
    """A value as Kubernetes' field errors show it (quoted, with what cannot be printed escaped)."""
    if isinstance(value, str):
        return '"' + "".join(map(_escape, value)) + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Located:
    """A string from the file with where it was: enough to name it in an error."""

    value: str
    where: str  # "FILE:LINE: FIELD.PATH"


@dataclass(frozen=True)
class PolicyFile:
    """The policy file's content, typed; list entries keep their position for later checks (names, CIDRs)."""

    path: Path
    mode: str = "enforce"
    strict: bool = False
    allow_loopback: bool = True
    deny: tuple[Located, ...] = ()
    allow: tuple[Located, ...] = ()
    deny_ranges: tuple[Located, ...] = ()
    upstreams: tuple[Located, ...] = ()
    http_proxy: str = "warn"
    lines: dict[str, int] = field(default_factory=dict, compare=False)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    tag = node.tag.rsplit(":", 1)[-1]
    return {"str": "a string", "int": "a number", "float": "a number", "bool": "a boolean", "null": "null"}.get(
        tag, f"a {tag}"
    )


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def at(self, node: yaml.Node, field_path: str) -> str:
        return f"{self.path}:{node.start_mark.line + 1}: {field_path}"

    def fail(self, node: yaml.Node, field_path: str, message: str) -> PolicyError:
        return PolicyError(f"{self.at(node, field_path)}: {message}")

    def scalar(self, node: yaml.Node, field_path: str) -> object:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, field_path, f"Invalid value: {_kind(node)}: must be a single value")
        try:
            return _construct(node)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            raise self.fail(node, field_path, f"Invalid value: {quote(node.value)}: {exc}") from None

    def boolean(self, node: yaml.Node, field_path: str) -> bool:
        value = self.scalar(node, field_path)
        if not isinstance(value, bool):
            raise self.fail(node, field_path, f"Invalid value: {quote(value)}: must be true or false")
        return value

    def choice(self, node: yaml.Node, field_path: str, supported: tuple[str, ...]) -> str:
        value = self.scalar(node, field_path)
        if value not in supported:
            values = ", ".join(quote(s) for s in supported)
            raise self.fail(node, field_path, f"Unsupported value: {quote(value)}: supported values: {values}")
        return str(value)

    def strings(self, node: yaml.Node, field_path: str) -> tuple[Located, ...]:
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
            return ()
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field_path, f"Invalid value: {_kind(node)}: must be a list of strings")
        out = []
        for i, item in enumerate(node.value):
            path = f"{field_path}[{i}]"
            value = self.scalar(item, path)
            if not isinstance(value, str):
                raise self.fail(item, path, f"Invalid value: {quote(value)}: must be a string")
            out.append(Located(value, self.at(item, path)))
        return tuple(out)


def _construct(node: yaml.ScalarNode) -> object:
    # One scalar, resolved by its tag as the safe loader would (bool, int, float, null, str).
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _text(path: Path) -> str:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read the policy file: {exc.strerror}") from exc
    except ValueError as exc:  # a NUL in the name
        raise PolicyError(f"{quote(str(path))}: cannot read the policy file: {exc}") from None
    if len(data) > MAX_BYTES:
        raise PolicyError(f"{path}: the policy file is larger than {MAX_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise PolicyError(
            f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}); "
            "a policy file is YAML, and host names are ASCII (write international names in their xn-- form)"
        ) from None
    if "\0" in text:
        raise PolicyError(f"{path}:{text[: text.index(chr(0))].count(chr(10)) + 1}: not a text file (NUL byte)")
    return text


def _compose(path: Path, text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.composer.ComposerError as exc:
        if "expected a single document" in str(exc):
            raise PolicyError(f"{path}: a policy file holds one YAML document, this one has several") from None
        raise _yaml_error(path, exc) from None
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None


def _yaml_error(path: Path, exc: yaml.YAMLError) -> PolicyError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return PolicyError(f"{where}: not valid YAML: {problem}")


def load(path: Path) -> PolicyFile:
    """Read and type-check a policy file. Entries (names, CIDRs, files, upstreams) are checked by the caller,
    which reports them with each entry's position."""
    text = _text(path)
    root = _compose(path, text)
    if root is None:
        return PolicyFile(path)
    r = _Reader(path)
    if not isinstance(root, yaml.MappingNode):
        raise r.fail(root, "<root>", f"Invalid value: {_kind(root)}: a policy file is a mapping of fields "
                     f"({', '.join(FIELDS)})")  # fmt: skip
    values: dict[str, object] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in root.value:
        key = r.scalar(key_node, "<key>")
        if not isinstance(key, str) or key not in FIELDS:
            at = key if isinstance(key, str) and _SIMPLE_KEY.match(key) else "<root>"
            raise r.fail(key_node, at, f"Unsupported value: unknown field {quote(key)}: known fields: "
                         f"{', '.join(FIELDS)}")  # fmt: skip
        if key in values:
            raise r.fail(key_node, key, f"Duplicate value: {quote(key)} is set twice")
        lines[key] = key_node.start_mark.line + 1
        if key == "mode":
            values[key] = r.choice(value_node, key, ("enforce", "audit"))
        elif key == "http_proxy":
            values[key] = r.choice(value_node, key, ("warn", "deny", "allow"))
        elif key in ("strict", "allow_loopback"):
            values[key] = r.boolean(value_node, key)
        else:
            values[key] = r.strings(value_node, key)
    return PolicyFile(path, lines=lines, **values)  # type: ignore[arg-type]
