"""Address ranges a provider publishes (GitHub's /meta, a cloud's ranges file), named by the user with
`deny_ranges` / `--deny-ranges`: a text file with one CIDR per line ('#' starts a comment), or a JSON document,
from which every string that is a CIDR is taken, or only those under the keys given after '#'
(`github-meta.json#web,api,git`). A name a deny rule blocks can then not be reached by an address the DNS proxy
never saw (its second address, `curl --resolve`, a lookup through another resolver)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from phalanx.guard.errors import PolicyError

__all__ = ["MAX_RANGES", "load_ranges"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_RANGES = 60_000  # the deny tries hold 65,536 entries each, and the policy's own CIDRs need room too


def _cidr(text: str) -> IPNetwork | None:
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None


def _walk(doc: object, out: list[IPNetwork]) -> None:
    if isinstance(doc, str):
        net = _cidr(doc)
        if net is not None:
            out.append(net)
    elif isinstance(doc, list):
        for item in doc:
            _walk(item, out)
    elif isinstance(doc, dict):
        for item in doc.values():
            _walk(item, out)


def _from_json(where: str, text: str, keys: list[str]) -> list[IPNetwork]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError(f"{where}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
    if keys:
        if not isinstance(doc, dict):
            raise PolicyError(f"{where}: keys were given after '#', but the document is not a JSON object")
        missing = [k for k in keys if k not in doc]
        if missing:
            raise PolicyError(f"{where}: no key {', '.join(repr(k) for k in missing)} (keys: {', '.join(sorted(doc))})")
        doc = [doc[k] for k in keys]
    out: list[IPNetwork] = []
    _walk(doc, out)
    return out


def _from_text(where: str, text: str) -> list[IPNetwork]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        try:
            out.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise PolicyError(
                f"{where}:{n}: Invalid value: {entry!r}: not a CIDR (10.0.0.0/8, 2001:db8::/32)"
            ) from None
    return out


def load_ranges(spec: str, where: str, base: Path | None = None) -> list[IPNetwork]:
    """The CIDRs of the ranges file `spec` (`FILE` or `FILE#key,key`); `where` names the entry in errors and
    `base` is the directory a relative path is relative to (the policy file's)."""
    name, _, fragment = spec.partition("#")
    path = Path(name)
    if base is not None and not path.is_absolute():
        path = base / path
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise PolicyError(f"{where}: cannot read the ranges file {str(path)!r}: {reason}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PolicyError(f"{path}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})") from None
    keys = [k.strip() for k in fragment.split(",") if k.strip()]
    is_json = text.lstrip().startswith(("{", "["))
    if keys and not is_json:
        raise PolicyError(f"{where}: keys after '#' need a JSON ranges file, {str(path)!r} is plain text")
    nets = _from_json(str(path), text, keys) if is_json else _from_text(str(path), text)
    if not nets:
        raise PolicyError(f"{where}: the ranges file {str(path)!r} holds no CIDR")
    if len(nets) > MAX_RANGES:
        raise PolicyError(f"{where}: {len(nets)} ranges in {str(path)!r}, more than the {MAX_RANGES} the guard holds")
    return list(dict.fromkeys(nets))
