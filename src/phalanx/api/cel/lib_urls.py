"""Kubernetes' URL library: ``url(s)``, ``isURL(s)`` and the accessors, with Go's ``net/url`` rules where selectors
can meet them (an absolute URL or an absolute path is required; the accessors return the parts as Go does)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from phalanx.api.cel import types as t
from phalanx.api.cel.decls import Function, Overload
from phalanx.api.cel.errors import CelError

__all__ = ["URL", "functions"]

URL_TYPE = t.struct("kubernetes.URL")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True, slots=True)
class URL:
    CEL_TYPE: ClassVar[t.CelType] = URL_TYPE
    text: str

    def parts(self) -> tuple[str, str, str, str]:
        split = urlsplit(self.text)
        opaque = bool(split.scheme) and not self.text[len(split.scheme) + 1 :].startswith("/")
        return split.scheme, split.netloc.rpartition("@")[2], "" if opaque else split.path, split.query


def _request_uri_error(text: str) -> str | None:
    """Go's ``url.ParseRequestURI``: absolute URL or absolute path, no fragment handling, no spaces."""
    if not text:
        return 'parse "": empty url'
    if any(c in text for c in " \t\n") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return f'parse "{text}": invalid character in URL'
    if _SCHEME.match(text) or text.startswith("/"):
        return None
    return f'parse "{text}": invalid URI for request'


def _url(text: str) -> URL:
    problem = _request_uri_error(text)
    if problem is not None:
        raise CelError(f"URL parse error during conversion from string: {problem}")
    return URL(text)


def _hostname(url: URL) -> str:
    host = url.parts()[1]
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _port(url: URL) -> str:
    host = url.parts()[1]
    if host.startswith("["):
        rest = host[host.find("]") + 1 :]
        return rest[1:] if rest.startswith(":") else ""
    return host.rsplit(":", 1)[1] if ":" in host else ""


def functions() -> Iterator[Function]:
    u, s = URL_TYPE, t.STRING
    yield Function("url", (Overload("string_to_url", (s,), u, _url),))
    yield Function("getScheme", (Overload("url_get_scheme", (u,), s, lambda x: x.parts()[0], True),))
    yield Function("getHost", (Overload("url_get_host", (u,), s, lambda x: x.parts()[1], True),))
    yield Function("getHostname", (Overload("url_get_hostname", (u,), s, _hostname, True),))
    yield Function("getPort", (Overload("url_get_port", (u,), s, _port, True),))
    yield Function("getEscapedPath", (Overload("url_get_escaped_path", (u,), s, lambda x: x.parts()[2], True),))
    yield Function(
        "getQuery",
        (
            Overload(
                "url_get_query",
                (u,),
                t.map_of(s, t.list_of(s)),
                lambda x: parse_qs(x.parts()[3], keep_blank_values=True),
                True,
            ),
        ),
    )
    yield Function("isURL", (Overload("is_url_string", (s,), t.BOOL, lambda x: _request_uri_error(x) is None),))
