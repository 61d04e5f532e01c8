"""The one way searchlake talks HTTP: search providers, the page fetcher, the
LLM client and OpenRouter all send through `call`.

`make_client` builds the shared `httpx.Client` (timeouts from settings, a
User-Agent naming searchlake, no automatic redirects, a network layer that
honours `deadline`). `call` sends one request, retries what may pass on a
second try (429/5xx, timeouts, dropped connections) with tenacity — after the
server's Retry-After (capped) or an exponential backoff with jitter — and
turns every failure into a `RemoteError` with a short code:

    timeout, network, http_<status> (http_429, http_404, http_500, ...),
    bad_response (body not JSON / not the expected shape)

`deadline(seconds)` bounds everything sent and received inside it — connect,
TLS, headers, body, every redirect and retry — not just each socket read, so
a server trickling one byte a second cannot hold a worker.

Messages, log lines (httpx's own included) and bodies handed back are
scrubbed of every configured secret (tasks/common/redaction.py); URLs in
messages never carry credentials or their query.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpcore
import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from tasks.common.errors import RemoteError
from tasks.common.redaction import redact, safe_url, scrub
from tasks.common.settings import Settings

__all__ = ["Attempt", "call", "deadline", "endpoint_url", "error_detail", "make_client", "redact", "request",
           "request_json", "retry_after_seconds", "safe_url", "scrub", "status_error", "user_agent"]

log = logging.getLogger(__name__)

MAX_RETRY_WAIT = 30.0  # never sleep longer than this for one Retry-After
BODY_EXCERPT_CHARS = 200  # how much of an error body a message may quote
T = TypeVar("T")


def user_agent() -> str:
    try:
        v = version("searchlake")
    except PackageNotFoundError:  # running from a checkout without install
        v = "dev"
    return f"searchlake/{v} (research pipeline; python-httpx)"


def make_client(settings: Settings | None = None, *, transport: httpx.BaseTransport | None = None,
                timeout: float | None = None) -> httpx.Client:
    """The shared client. Redirects are not followed automatically: custom
    auth headers (X-Subscription-Token, x-api-key) would travel along to
    another host, and the page fetcher must vet every hop itself."""
    _install_log_redaction()
    seconds = timeout if timeout is not None else (settings or Settings()).http_timeout
    return httpx.Client(
        timeout=httpx.Timeout(seconds),
        headers={"User-Agent": user_agent()},
        follow_redirects=False,
        transport=transport or _deadline_transport(),
    )


def endpoint_url(base: str, path: str) -> str:
    """`path` below a configured base URL, keeping the base's credentials and
    query (`https://u:p@host/v1?token=t` + `chat/completions`)."""
    url = httpx.URL(base)
    return str(url.copy_with(path=url.path.rstrip("/") + "/" + path.lstrip("/")))


# -- one deadline for a whole exchange -----------------------------------------
_deadline: ContextVar[float | None] = ContextVar("searchlake_http_deadline", default=None)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Everything sent and received inside must finish within `seconds`;
    past it the pending read, write or connect fails as a timeout. Nested
    deadlines: the earlier one wins."""
    if seconds is None:
        yield
        return
    end = time.monotonic() + seconds
    current = _deadline.get()
    token = _deadline.set(end if current is None else min(current, end))
    try:
        yield
    finally:
        _deadline.reset(token)


def _left() -> float | None:
    end = _deadline.get()
    return None if end is None else end - time.monotonic()


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """A socket operation's timeout cut to what is left of the deadline."""
    left = _left()
    if left is None:
        return timeout
    if left <= 0:
        raise error("the deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket layer with every timeout cut to the current deadline
    (httpx's own timeouts apply per socket operation, so a server sending one
    header line a second never trips them)."""

    def __init__(self, backend: httpcore.NetworkBackend):
        self._backend = backend

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                                         local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_unix_socket(
            path, _bounded(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _deadline_transport() -> httpx.HTTPTransport:
    transport = httpx.HTTPTransport()
    # httpx takes no network backend argument; its connection pool (httpcore)
    # does, and uses it for every connection it opens from now on.
    # tests/common/test_http.py checks this against a trickling server.
    pool = transport._pool
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return transport


# -- redaction of httpx's log lines ---------------------------------------------
class _RedactingFilter(logging.Filter):
    """httpx logs `HTTP Request: GET <full url>` at INFO; keys in the query
    and credentials in the URL would reach the logs (and Prefect's log
    store) without this."""

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


# -- retry policy ----------------------------------------------------------------
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
        if isinstance(exc, RemoteError) and exc.retry_after is not None:
            return min(exc.retry_after, self.cap)
        return min(self.backoff(retry_state), self.cap)


def _sleep(seconds: float) -> None:
    # Looked up at call time so tests can replace it and not wait.
    time.sleep(seconds)


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, RemoteError) and exc.retryable


def _retry_fits_deadline(retry_state) -> bool:
    """Stop when the wait before the next try would outlast the deadline."""
    left = _left()
    wait = retry_state.upcoming_sleep if retry_state.upcoming_sleep is not None else 0.0
    return left is not None and left <= wait


# -- reading a response ----------------------------------------------------------
def status_error(response: httpx.Response, *, retryable: bool | None = None) -> RemoteError:
    """http_<status> for a failed answer; retryable for 429 and 5xx unless
    told otherwise, with the server's Retry-After."""
    status = response.status_code
    if retryable is None:
        retryable = status == 429 or status >= 500
    return RemoteError(f"http_{status}", f"HTTP {status}: {error_detail(response)}", http_status=status,
                       retryable=retryable, retry_after=retry_after_seconds(response.headers.get("Retry-After")))


def require_success(response: httpx.Response) -> httpx.Response:
    if not response.is_success:
        raise status_error(response)
    return response


def error_detail(response: httpx.Response) -> str:
    """What the server says went wrong, as one short line: the `error` of a
    JSON error body (`{"error": {"message", "metadata": {"error_type"}}}` or
    `{"error": "..."}`), else an excerpt of the body, else the reason phrase."""
    try:
        text = response.text
    except (httpx.HTTPError, UnicodeDecodeError):  # streamed or undecodable
        return "<unreadable body>"
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("message"):
        metadata = error.get("metadata") if isinstance(error.get("metadata"), dict) else {}
        kind = metadata.get("error_type")
        text = f"{kind}: {error['message']}" if kind else str(error["message"])
    elif isinstance(error, str) and error:
        text = error
    text = " ".join(text.split())
    if not text:
        return response.reason_phrase or "error"
    return text[:BODY_EXCERPT_CHARS] + ("…" if len(text) > BODY_EXCERPT_CHARS else "")


def json_body(response: httpx.Response, expect: type = dict) -> Any:
    """The body as JSON of type `expect`, else bad_response."""
    try:
        payload = response.json()
    except ValueError:
        raise RemoteError("bad_response", f"body is not JSON: {error_detail(response)}",
                          http_status=response.status_code) from None
    if not isinstance(payload, expect):
        raise RemoteError("bad_response", f"expected a JSON {expect.__name__}, got {type(payload).__name__}",
                          http_status=response.status_code)
    return payload


# -- calls -----------------------------------------------------------------------
@dataclass
class Attempt:
    """One try of a call, as a caller may want to record it."""

    http_status: int | None = None
    error: str | None = None
    retry_after: float | None = None
    duration_ms: int = 0


def call(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    read: Callable[[httpx.Response], T] = require_success,
    retries: int = 1,
    secrets: Iterable[str | None] = (),
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    timeout: float | None = None,
    within: float | None = None,
    max_retry_wait: float = MAX_RETRY_WAIT,
    attempts: list[Attempt] | None = None,
    stream: bool = False,
) -> T:
    """Send one request and return `read(response)`. `read` raises a
    RemoteError for an answer it cannot use (retried when `retryable`); the
    default accepts 2xx only. Retries `retries` times; the whole call,
    retries and body included, ends within `within` seconds (and any
    enclosing `deadline`). With `stream`, the body is left unread for the
    caller, who closes the response. Every failure is a RemoteError whose
    message names `METHOD scheme://host/path` and carries no secret."""
    secrets = tuple(s for s in secrets if s)
    target = httpx.URL(url)
    if params:
        # httpx replaces a URL's own query with `params`; a configured URL
        # may carry a token there, so merge instead.
        target = target.copy_merge_params(params)
    where = f"{method.upper()} {safe_url(target)}"
    limit = timeout if timeout is not None else client.timeout.read
    # None would mean "no timeout at all" to httpx, not "the client's".
    per_call = httpx.USE_CLIENT_DEFAULT if timeout is None else timeout

    def once() -> T:
        started = time.monotonic()
        attempt = Attempt()
        try:
            response = client.send(client.build_request(method, target, headers=headers, json=json,
                                                        timeout=per_call), stream=stream)
        except httpx.TimeoutException:
            failure = _timeout(limit, started)
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            failure = RemoteError("network", f"network error: {_describe(exc, secrets)}", retryable=True)
        except httpx.HTTPError as exc:  # a bad URL or proxy setting: no second try will fix it
            failure = RemoteError("network", f"network error: {_describe(exc, secrets)}")
        else:
            attempt.http_status = response.status_code
            try:
                value = read(response)
            except RemoteError as exc:
                failure = exc
            except httpx.TimeoutException:  # reading a body inside `read`
                failure = _timeout(limit, started)
            else:
                attempt.duration_ms = int((time.monotonic() - started) * 1000)
                if attempts is not None:
                    attempts.append(attempt)
                return value
            if stream:
                response.close()
        attempt.duration_ms = int((time.monotonic() - started) * 1000)
        attempt.error, attempt.retry_after = redact(failure.reason, secrets), failure.retry_after
        if attempts is not None:
            attempts.append(attempt)
        raise failure

    def log_retry(retry_state) -> None:
        exc = retry_state.outcome.exception()
        log.warning("%s failed (%s), retrying in %.1fs",
                    where, redact(exc.reason, secrets), retry_state.next_action.sleep)

    retrying = Retrying(
        stop=stop_after_attempt(retries + 1) | _retry_fits_deadline,
        retry=retry_if_exception(_is_retryable),
        wait=_WaitRetryAfter(max_retry_wait),
        sleep=_sleep,
        before_sleep=log_retry,
        reraise=True,
    )
    try:
        with deadline(within):
            return retrying(once)
    except RemoteError as exc:
        reason = redact(exc.reason, secrets)
        raise RemoteError(exc.code, f"{where}: {reason}", http_status=exc.http_status, reason=reason,
                          retry_after=exc.retry_after) from None


def request(client: httpx.Client, method: str, url: str, **kwargs) -> httpx.Response:
    """`call` accepting 2xx answers: the response, or RemoteError."""
    return call(client, method, url, **kwargs)


def request_json(client: httpx.Client, method: str, url: str, *, expect: type = dict, **kwargs) -> Any:
    """`call`, then the body as JSON of type `expect` (else bad_response),
    scrubbed of every configured secret: a server may echo the request."""
    secrets = tuple(kwargs.get("secrets", ()))
    payload = call(client, method, url, read=lambda r: json_body(require_success(r), expect), **kwargs)
    return scrub(payload, secrets)


def _timeout(limit: float | None, started: float) -> RemoteError:
    left = _left()
    if left is not None and left <= 0:
        waited = time.monotonic() - started
        return RemoteError("timeout", f"no complete answer before the deadline ({waited:.1f} s) (timeout)",
                           retryable=True)
    return RemoteError("timeout", f"no answer within {limit:g} s (timeout)" if limit else "timed out",
                       retryable=True)


def _describe(exc: BaseException, secrets: Iterable[str]) -> str:
    # The exception text may quote the request URL; redact it.
    detail = redact(str(exc), secrets)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
