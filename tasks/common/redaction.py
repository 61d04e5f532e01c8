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
import re
import threading
from collections.abc import Iterable
from typing import Any

import httpx

REDACTED = "***"
# Shorter values are removed only where they sit in a URL: replacing "pw"
# everywhere would garble ordinary text without protecting anything.
MIN_SECRET_CHARS = 4

# Query parameters that carry credentials in the APIs we call (OpenAlex
# api_key, TheNewsAPI api_token, ...) and in URLs users configure.
SENSITIVE_PARAMS = ("api_key", "apikey", "api_token", "access_token", "token", "key", "secret",
                    "password", "passwd", "auth", "signature", "sig")
_SENSITIVE_PARAM_RE = re.compile(
    r"(?i)([?&](?:[a-z0-9_.-]*_)?(?:%s)=)[^&#\s\"'<>]+" % "|".join(re.escape(p) for p in SENSITIVE_PARAMS)
)
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
    return _SENSITIVE_PARAM_RE.sub(r"\1" + REDACTED, text)


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


def safe_url(url: httpx.URL | str) -> str:
    """scheme://host[:port]/path: enough to say where a call went, with no
    credentials and no query string (keys travel there)."""
    try:
        u = httpx.URL(str(url))
    except httpx.InvalidURL:
        return redact(str(url).split("?", 1)[0])
    port = f":{u.port}" if u.port else ""
    return f"{u.scheme}://{u.host}{port}{u.path}"


_CONNINFO_PASSWORD_RE = re.compile(r"(?i)\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def connection_string_passwords(conninfo: str | None) -> list[str]:
    """The password of a libpq-style `key=value` connection string (as a
    DuckLake PostgreSQL catalog takes), quoted or not."""
    if not conninfo:
        return []
    return [m.group(1).strip("'") for m in _CONNINFO_PASSWORD_RE.finditer(conninfo)]


def url_credentials(url: str | None) -> list[str]:
    """The secret parts of a configured URL: its password, user:password (and
    the Basic-auth form a server might echo), and values of query parameters
    named like credentials."""
    if not url:
        return []
    try:
        u = httpx.URL(url)
    except httpx.InvalidURL:
        return []
    found = []
    if u.password:
        userinfo = f"{u.username}:{u.password}"
        found += [u.password, userinfo, base64.b64encode(userinfo.encode()).decode()]
    elif u.username:
        found.append(u.username)  # a bare token in the user part
    for name, value in u.params.multi_items():
        if value and _SENSITIVE_PARAM_RE.search(f"?{name}={value}"):
            found.append(value)
    return found
