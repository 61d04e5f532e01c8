"""The one way searchlake talks HTTP to search APIs.

`make_client` builds the shared `httpx.Client` (timeouts from settings, a
User-Agent naming searchlake, no automatic redirects). `request` and
`request_json` send one call, retry transient failures with tenacity and turn
every failure into a `RemoteError` with a short code:

    timeout, network, http_<status> (http_429, http_404, http_500, ...),
    bad_response (body not JSON / not the expected shape)

Secrets are passed in explicitly and are scrubbed from every message and log
line this module produces, and URLs in messages never carry their query.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from tasks.common.settings import Settings
from tasks.common.errors import RemoteError

log = logging.getLogger(__name__)

MAX_RETRY_WAIT = 30.0  # never sleep longer than this for one Retry-After
BODY_EXCERPT_CHARS = 200  # how much of an error body a message may quote
REDACTED = "***"

# Query parameters that carry credentials in the APIs we call (OpenAlex
# api_key, TheNewsAPI api_token, ...). httpx logs full request URLs at INFO.
SENSITIVE_PARAMS = ("api_key", "apikey", "api_token", "access_token", "token", "key")
_SENSITIVE_PARAM_RE = re.compile(
    r"(?i)([?&](?:%s)=)[^&#\s\"']+" % "|".join(re.escape(p) for p in SENSITIVE_PARAMS)
)


def user_agent() -> str:
    try:
        v = version("searchlake")
    except PackageNotFoundError:  # running from a checkout without install
        v = "dev"
    return f"searchlake/{v} (research pipeline; python-httpx)"


def make_client(settings: Settings, *, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """The shared client. Redirects are not followed automatically: custom
    auth headers (X-Subscription-Token, x-api-key) would travel along to
    another host, and the page fetcher must vet every hop itself."""
    _install_log_redaction()
    return httpx.Client(
        timeout=httpx.Timeout(settings.http_timeout),
        headers={"User-Agent": user_agent()},
        follow_redirects=False,
        transport=transport,
    )


# -- redaction ---------------------------------------------------------------
def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove secret values and credential-looking query parameters."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return _SENSITIVE_PARAM_RE.sub(r"\1" + REDACTED, text)


def safe_url(url: httpx.URL | str) -> str:
    """scheme://host[:port]/path: enough to say where a call went, with no
    query string (keys travel there)."""
    u = httpx.URL(str(url))
    port = f":{u.port}" if u.port else ""
    return f"{u.scheme}://{u.host}{port}{u.path}"


class _RedactingFilter(logging.Filter):
    """httpx logs `HTTP Request: GET <full url>` at INFO; keys in the query
    would reach the logs (and Prefect's log store) without this."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


_filter = _RedactingFilter()


def _install_log_redaction() -> None:
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)


# -- retry policy ------------------------------------------------------------
class _TransientStatus(Exception):
    """A 429 or 5xx answer: worth one more try, maybe after Retry-After."""

    def __init__(self, response: httpx.Response):
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def _is_transient(exc: BaseException) -> bool:
    # Timeouts, refused/reset connections and broken framing can pass;
    # UnsupportedProtocol or a bad proxy setting will not, so no retry there.
    return isinstance(
        exc, (_TransientStatus, httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
    )


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date (RFC 9110).
    None when absent or unreadable; never negative."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


class _WaitRetryAfter:
    """Honour the server's Retry-After (capped); otherwise exponential backoff
    with jitter so parallel queries do not retry in lockstep."""

    def __init__(self, cap: float):
        self.cap = cap
        self.backoff = wait_exponential_jitter(multiplier=0.5, max=cap, jitter=0.5)

    def __call__(self, retry_state) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _TransientStatus):
            delay = retry_after_seconds(exc.response.headers.get("Retry-After"))
            if delay is not None:
                return min(delay, self.cap)
        return self.backoff(retry_state)


def _sleep(seconds: float) -> None:
    # Looked up at call time so tests can replace it and not wait.
    time.sleep(seconds)


# -- calls -------------------------------------------------------------------
def request(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    retries: int = 1,
    secrets: Iterable[str | None] = (),
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    max_retry_wait: float = MAX_RETRY_WAIT,
) -> httpx.Response:
    """Send one call, retrying 429/5xx/timeouts/connection errors `retries`
    times. Returns a 2xx response or raises RemoteError."""
    secrets = tuple(s for s in secrets if s)
    where = f"{method.upper()} {safe_url(url)}"

    def send_once() -> httpx.Response:
        response = client.request(method, url, params=params, headers=headers, json=json)
        if response.status_code == 429 or response.status_code >= 500:
            raise _TransientStatus(response)
        return response

    def log_retry(retry_state) -> None:
        exc = retry_state.outcome.exception()
        log.warning(
            "%s failed (%s), retrying in %.1fs",
            where, redact(_describe(exc), secrets), retry_state.next_action.sleep,
        )

    retrying = Retrying(
        stop=stop_after_attempt(retries + 1),
        retry=retry_if_exception(_is_transient),
        wait=_WaitRetryAfter(max_retry_wait),
        sleep=_sleep,
        before_sleep=log_retry,
        reraise=True,
    )
    try:
        response = retrying(send_once)
    except _TransientStatus as exc:
        raise _status_error(exc.response, where, secrets) from None
    except httpx.TimeoutException as exc:
        # `from None`: httpx exceptions hold the request, whose URL may carry a key.
        raise RemoteError("timeout", redact(f"{where}: timed out ({_describe(exc)})", secrets)) from None
    except httpx.HTTPError as exc:
        raise RemoteError("network", redact(f"{where}: {_describe(exc)}", secrets)) from None
    if not response.is_success:
        raise _status_error(response, where, secrets)
    return response


def request_json(client: httpx.Client, method: str, url: str, *, expect: type = dict, **kwargs) -> Any:
    """`request`, then the body as JSON of type `expect` (else bad_response)."""
    response = request(client, method, url, **kwargs)
    secrets = kwargs.get("secrets", ())
    try:
        payload = response.json()
    except ValueError:
        raise RemoteError(
            "bad_response",
            redact(f"{method.upper()} {safe_url(url)}: body is not JSON: {_excerpt(response)}", secrets),
            http_status=response.status_code,
        ) from None
    if not isinstance(payload, expect):
        raise RemoteError(
            "bad_response",
            f"{method.upper()} {safe_url(url)}: expected a JSON {expect.__name__}, got {type(payload).__name__}",
            http_status=response.status_code,
        )
    return payload


def _status_error(response: httpx.Response, where: str, secrets: Iterable[str]) -> RemoteError:
    status = response.status_code
    message = f"{where}: HTTP {status}: {_excerpt(response)}"
    return RemoteError(f"http_{status}", redact(message, secrets), http_status=status)


def _excerpt(response: httpx.Response) -> str:
    """A short, single-line piece of the body: APIs explain errors there."""
    try:
        text = response.text
    except (httpx.HTTPError, UnicodeDecodeError):  # streamed or undecodable
        return "<unreadable body>"
    text = " ".join(text.split())
    return text[:BODY_EXCERPT_CHARS] + ("…" if len(text) > BODY_EXCERPT_CHARS else "")


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "no error"
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
