"""The one way searchlake talks HTTP: search providers, the page fetcher, the
LLM client and OpenRouter all send through `call`.

`make_client` builds the shared `httpx.Client` (timeouts from settings, a
User-Agent naming searchlake, no automatic redirects, a transport that
honours `deadline`: tasks/common/http_deadline.py). `call` sends one
`Outbound` request under a `CallPolicy` (tries, time limits, secrets),
retries what is transient (429/5xx, timeouts, dropped connections) with
tenacity — after the server's Retry-After (capped) or an exponential backoff
with jitter — and turns every failure of httpx into a `RemoteError`
(tasks/common/errors.py; not chained to httpx's error, whose text quotes
the URL with its credentials and query) with a short code:

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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from schemas.errors import RemoteError, is_transient
from tasks.common.http_deadline import DeadlineTransport, deadline, time_left
from tasks.common.redaction import redact, safe_url, scrub
from tasks.common.settings import Settings

__all__ = ["Attempt", "CallPolicy", "Outbound", "call", "deadline", "endpoint_url", "error_detail", "make_client",
           "redact", "request", "request_json", "retry_after_seconds", "safe_url", "scrub", "status_error", "user_agent"]

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
        transport=transport or DeadlineTransport(),
    )


def endpoint_url(base: str, path: str) -> str:
    """`path` below a configured base URL, keeping the base's credentials and
    query (`https://u:p@host/v1?token=t` + `chat/completions`)."""
    url = httpx.URL(base)
    return str(url.copy_with(path=url.path.rstrip("/") + "/" + path.lstrip("/")))


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


def _retry_fits_deadline(retry_state) -> bool:
    """Stop when the wait before the next try would outlast the deadline."""
    left = time_left()
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
@dataclass(frozen=True)
class Outbound:
    """One request as a caller means it. `params` are merged into the URL's
    own query (httpx would replace it: a configured URL may carry a token)."""

    method: str
    url: str
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] | None = None
    json: Any = None

    def target(self) -> httpx.URL:
        url = httpx.URL(self.url)
        return url.copy_merge_params(self.params) if self.params else url

    def where(self) -> str:
        """`METHOD scheme://host/path`, as messages name it (no credentials, no query)."""
        return f"{self.method.upper()} {safe_url(self.target())}"


@dataclass(frozen=True)
class CallPolicy:
    """How a call is made. `retries` more tries after a transient failure;
    `timeout` per socket operation (None: the client's); the whole call,
    retries and body included, ends within `within` seconds (and any
    enclosing `deadline`); a server's Retry-After is waited at most
    `max_retry_wait`; `secrets` never appear in a message or body handed
    back; with `stream` the body is left unread for the caller, who closes
    the response. Without `retry_timeouts` a try that timed out is not
    repeated (a model server that is one request at a time keeps generating
    the answer the client gave up on: another try would queue behind it)."""

    retries: int = 1
    timeout: float | None = None
    within: float | None = None
    max_retry_wait: float = MAX_RETRY_WAIT
    secrets: tuple[str, ...] = field(default=())
    stream: bool = False
    retry_timeouts: bool = True

    def __post_init__(self) -> None:  # any iterable of secrets, unset ones dropped
        object.__setattr__(self, "secrets", tuple(s for s in self.secrets if s))


@dataclass
class Attempt:
    """One try of a call, as a caller may want to record it."""

    http_status: int | None = None
    error: str | None = None
    retry_after: float | None = None
    duration_ms: int = 0


def call(client: httpx.Client, outbound: Outbound, policy: CallPolicy = CallPolicy(), *,
         read: Callable[[httpx.Response], T] = require_success, attempts: list[Attempt] | None = None) -> T:
    """Send `outbound` and return `read(response)`. `read` raises a
    RemoteError for an answer it cannot use (retried when transient); the
    default accepts 2xx only. Every failure is a RemoteError whose message
    names `METHOD scheme://host/path` and carries no secret. Each try is
    appended to `attempts` when given."""
    where = outbound.where()

    def log_retry(retry_state) -> None:
        exc = retry_state.outcome.exception()
        log.warning("%s failed (%s), retrying in %.1fs",
                    where, redact(exc.reason, policy.secrets), retry_state.next_action.sleep)

    retrying = Retrying(
        stop=stop_after_attempt(policy.retries + 1) | _retry_fits_deadline,
        retry=retry_if_exception(lambda exc: is_transient(exc) and (policy.retry_timeouts or not _timed_out(exc))),
        wait=_WaitRetryAfter(policy.max_retry_wait),
        sleep=_sleep,
        before_sleep=log_retry,
        reraise=True,
    )
    try:
        with deadline(policy.within):
            return retrying(_try_once, client, outbound, policy, read, attempts)
    except RemoteError as exc:
        reason = redact(exc.reason, policy.secrets)
        # Not chained: httpx's error quotes the request's URL, credentials and query included.
        raise RemoteError(exc.code, f"{where}: {reason}", http_status=exc.http_status, reason=reason,
                          retry_after=exc.retry_after) from None


def _try_once(client: httpx.Client, outbound: Outbound, policy: CallPolicy,
              read: Callable[[httpx.Response], T], attempts: list[Attempt] | None) -> T:
    started = time.monotonic()
    attempt = Attempt()
    if attempts is not None:
        attempts.append(attempt)
    # None would mean "no timeout at all" to httpx, not "the client's".
    per_call = httpx.USE_CLIENT_DEFAULT if policy.timeout is None else policy.timeout
    limit = policy.timeout if policy.timeout is not None else client.timeout.read
    try:
        try:
            response = client.send(client.build_request(outbound.method, outbound.target(), headers=outbound.headers,
                                                        json=outbound.json, timeout=per_call),
                                   stream=policy.stream)
        except httpx.HTTPError as exc:
            raise _httpx_failure(exc, limit, started, policy.secrets) from exc
        attempt.http_status = response.status_code
        try:
            return read(response)
        except httpx.TimeoutException as exc:  # reading a body inside `read`
            raise _timeout(limit, started) from exc
        except RemoteError:
            if policy.stream:
                response.close()
            raise
    except RemoteError as failure:
        attempt.error, attempt.retry_after = redact(failure.reason, policy.secrets), failure.retry_after
        raise
    finally:
        attempt.duration_ms = int((time.monotonic() - started) * 1000)


def _httpx_failure(exc: httpx.HTTPError, limit: float | None, started: float, secrets: Iterable[str]) -> RemoteError:
    """httpx's error as the family's: a timeout or a dropped connection is
    transient; a bad URL or proxy setting is not (no second try fixes it)."""
    if isinstance(exc, httpx.TimeoutException):
        return _timeout(limit, started)
    dropped = isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError))
    return RemoteError("network", f"network error: {_describe(exc, secrets)}", retryable=dropped)


def request(client: httpx.Client, method: str, url: str, *, params: Mapping[str, Any] | None = None,
            headers: Mapping[str, str] | None = None, json: Any = None, policy: CallPolicy = CallPolicy(),
            read: Callable[[httpx.Response], T] = require_success, attempts: list[Attempt] | None = None,
            **policy_fields: Any) -> T:
    """`call` of METHOD url: the response of a 2xx answer (or what `read`
    makes of it), or RemoteError. `policy_fields` change single fields of
    `policy` (retries=0, within=5.0, ...)."""
    return call(client, Outbound(method, url, params, headers, json), _policy(policy, policy_fields),
                read=read, attempts=attempts)


def request_json(client: httpx.Client, method: str, url: str, *, expect: type = dict,
                 params: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None, json: Any = None,
                 policy: CallPolicy = CallPolicy(), **policy_fields: Any) -> Any:
    """`request`, then the body as JSON of type `expect` (else bad_response),
    scrubbed of every configured secret: a server may echo the request."""
    policy = _policy(policy, policy_fields)
    payload = call(client, Outbound(method, url, params, headers, json), policy,
                   read=lambda r: json_body(require_success(r), expect))
    return scrub(payload, policy.secrets)


def _policy(policy: CallPolicy, fields: Mapping[str, Any]) -> CallPolicy:
    return replace(policy, **fields) if fields else policy


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, RemoteError) and exc.code == "timeout"


def _timeout(limit: float | None, started: float) -> RemoteError:
    left = time_left()
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
