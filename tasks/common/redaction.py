"""Keeping secrets out of everything searchlake writes or says.

Every configured secret (API keys, tokens, the credential parts of configured
URLs) is registered here when a Settings object is built. `redact` removes
them, plus URL credentials and credential-looking query parameters, from any
text; `scrub` does the same through a JSON value. Text that came back from a
remote service passes through here before it is stored, since a server may
echo the request that carried the key.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit


REDACTED = "***"
# Shorter values are removed only where they sit in a URL: replacing "pw"
# everywhere would garble ordinary text without protecting anything.
MIN_SECRET_CHARS = 4

# Query parameter names that carry credentials, by their shape: any name
# with token, secret, password or credential in it, a key (`key`, `api_key`,
# `x-api-key`, `private-key`), a signature (`sig`, `signature`, `X-Amz-Signature`)
# or an auth value (`auth`, `authorization`, `auth_code`, but not `author`).
_SECRET_PARAM_NAME = re.compile(
    r"(?ix) (token|secret|passw(or)?d|pwd|credential|session)"
    r" | (^|[-_.]) (api)? key s? $ | apikey"
    r" | (^|[-_.]) sig | signature"
    r" | (^|[-_.]) auth (?!or(?!i[sz]))"
)
_QUERY_PARAM_RE = re.compile(r"([?&;])([^=&#;\s\"'<>?]+)=([^&#;\s\"'<>]*)")
# Parameters of a configured URL known to carry no secret; every other one
# a user writes into such a URL is taken for a credential.
HARMLESS_PARAMS = frozenset({
    "format", "language", "lang", "locale", "hl", "gl", "region", "country", "safesearch", "categories",
    "category", "engines", "time_range", "pageno", "page", "per_page", "limit", "count", "q", "query", "sort",
    "order", "theme", "v", "version",
})
_URL_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@")

_lock = threading.Lock()
_known: tuple[str, ...] = ()


def register(secrets: Iterable[str | None]) -> None:
    """Remember secrets process-wide, so every later `redact` removes them."""
    global _known
    fresh = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
    with _lock:
        if fresh - set(_known):
            # Longest first: a password inside "user:password" goes with it.
            _known = tuple(sorted(set(_known) | fresh, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` without any registered or given secret, URL credentials or
    credential query parameters."""
    extra = [s for s in secrets if s and len(s) >= MIN_SECRET_CHARS]
    for secret in sorted(extra, key=len, reverse=True) + list(_known):
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _URL_USERINFO_RE.sub(r"\1" + REDACTED + "@", text)
    return _QUERY_PARAM_RE.sub(_redacted_param, text)


def known_secrets() -> tuple[str, ...]:
    return _known


def register_environment() -> None:
    """Remember as secrets the values of environment variables named as
    credentials are (TAVILY_API_KEY, ..._TOKEN, ..._PASSWORD) and the
    credentials inside ..._URL ones: a command that never loads the module
    declaring a provider's settings still knows that provider's key."""
    found: list[str] = []
    for name, value in os.environ.items():
        if name.upper().endswith("_URL"):
            found += url_credentials(value)
        elif is_secret_param(name):
            found.append(value)
    register(found)


def without_known_secrets(text: str) -> str:
    """`text` without any registered secret: what is applied to data (a
    query's rows), where a URL's parameters are the data's own."""
    for secret in _known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def is_secret_param(name: str) -> bool:
    """Whether a query parameter (or header) of this name carries a credential."""
    return bool(_SECRET_PARAM_NAME.search(name))


def _redacted_param(match: re.Match) -> str:
    lead, name, value = match.groups()
    return f"{lead}{name}={REDACTED}" if value and is_secret_param(name) else match.group(0)


def scrub(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """`redact` applied to every string (keys included) of a JSON value."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    return value


def safe_url(url: "httpx.URL | str") -> str:
    """scheme://host[:port]/path: enough to say where a call went, with no
    credentials and no query string (keys travel there)."""
    import httpx  # here, not at the top: the quick commands never reach it

    try:
        u = httpx.URL(str(url))
    except httpx.InvalidURL:
        return redact(str(url).split("?", 1)[0])
    port = f":{u.port}" if u.port else ""
    return f"{u.scheme}://{u.host}{port}{u.path}"


_CONNINFO_PASSWORD_RE = re.compile(r"(?i)\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def without_password(conninfo: str) -> tuple[str, str | None]:
    """A libpq connection string (`key=value` pairs, or a postgresql:// URI
    after DuckLake's `postgres:`) without its password, and the password
    (unquoted), so that the password can travel apart from it."""
    prefix, _, rest = conninfo.partition(":")
    if rest.startswith(("postgres://", "postgresql://")):
        uri = urlsplit(rest)
        if uri.password is None:
            return conninfo, None
        host = uri.netloc.rpartition("@")[2]
        user = uri.netloc.rpartition("@")[0].partition(":")[0]
        return f"{prefix}:{urlunsplit(uri._replace(netloc=f'{user}@{host}' if user else host))}", unquote(uri.password)
    found = list(_CONNINFO_PASSWORD_RE.finditer(conninfo))
    if not found:
        return conninfo, None
    rest = " ".join(_CONNINFO_PASSWORD_RE.sub(" ", conninfo).split())
    return rest, _unquoted(found[-1].group(1))  # libpq: the last one given wins


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def connection_string_passwords(conninfo: str | None) -> list[str]:
    """The password of a DuckLake PostgreSQL catalog's connection string
    (`key=value` pairs, quoted or not, or a postgresql:// URI)."""
    if not conninfo:
        return []
    password = without_password(conninfo)[1]
    return [password] if password else []


def url_credentials(url: str | None) -> list[str]:
    """The secret parts of a configured URL: its password, user:password (and
    the Basic-auth form a server might echo), and the value of every query
    parameter not known to be harmless."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        username, password = unquote(parts.username or ""), unquote(parts.password or "")
    except ValueError:
        return []
    found = []
    if password:
        userinfo = f"{username}:{password}"
        found += [password, userinfo, base64.b64encode(userinfo.encode()).decode()]
    elif username:
        found.append(username)  # a bare token in the user part
    for name, value in parse_qsl(parts.query):
        if value and (name.lower() not in HARMLESS_PARAMS or is_secret_param(name)):
            found.append(value)
    return found
