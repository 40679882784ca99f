"""Semantic versions parsed exactly as blang/semver v4 ``Parse`` does, with its error messages, plus Kubernetes'
normalisation for ``semver(s, true)`` (strip ``v``, drop leading zeros, fill in a missing minor or patch)."""

from __future__ import annotations

from phalanx.api.cel.values import Semver

__all__ = ["parse_semver"]

_ALPHANUM = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def _number(part: str, what: str) -> int:
    if not part or not part.isascii() or not part.isdigit():
        raise ValueError(f"Invalid character(s) found in {what} number {part!r}".replace("'", '"'))
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {part!r}".replace("'", '"'))
    return int(part)


def _prerelease(part: str) -> str:
    if not part:
        raise ValueError("Prerelease is empty")
    if part.isascii() and part.isdigit():
        if len(part) > 1 and part[0] == "0":
            raise ValueError(f'Numeric PreRelease version must not contain leading zeroes "{part}"')
    elif not set(part) <= _ALPHANUM:
        raise ValueError(f'Invalid character(s) found in prerelease "{part}"')
    return part


def _strict(text: str) -> Semver:
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "major"), _number(parts[1], "minor")
    patch_text, build, pre = parts[2], [], []
    if "+" in patch_text:
        patch_text, _, tail = patch_text.partition("+")
        build = tail.split(".")
    if "-" in patch_text:
        patch_text, _, tail = patch_text.partition("-")
        pre = tail.split(".")
    patch = _number(patch_text, "patch")
    for b in build:
        if not b:
            raise ValueError("Build meta data is empty")
        if not set(b) <= _ALPHANUM:
            raise ValueError(f'Invalid character(s) found in build meta data "{b}"')
    return Semver(major, minor, patch, tuple(_prerelease(p) for p in pre), tuple(build))


def _normalize(text: str) -> str:
    parts = text.removeprefix("v").split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in "0123456789":
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def parse_semver(text: str, normalize: bool = False) -> Semver:
    return _strict(_normalize(text) if normalize else text)
