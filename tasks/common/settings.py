"""One settings object, read from the environment (and `.env`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AliasChoices, Field, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from schemas.bundle import MAX_CONTENT_CHARS
from schemas.governance import BUDGET_VARIABLES, Budget
from schemas.scoring import ScoringFile
from schemas.errors import UserError
from tasks.common.redaction import connection_string_passwords, redact, register, url_credentials

# Settings holding URLs a user may write credentials into (user:password@, ?token=).
URL_FIELDS = ("llm_base_url", "openrouter_base_url", "lake")
# DuckLake metadata connection strings that name a database server, not a file.
_CATALOG_SERVER = re.compile(r"^(postgres|mysql):", re.IGNORECASE)
# An embedded catalog kept in SQLite (several processes on the machine may
# read it while one writes) rather than in a DuckDB file (one process at a time).
_SQLITE_PREFIX = re.compile(r"^sqlite:", re.IGNORECASE)
SQLITE_SUFFIXES = (".sqlite", ".sqlite3")
DEFAULT_CATALOG_FILE = "catalog.sqlite"
# The DuckDB-file catalog earlier versions created by default: a home that has
# one (and no SQLite catalog) keeps using it until it is migrated.
DUCKDB_CATALOG_FILE = "catalog.ducklake"
# Shorter tokens could be guessed by trying: the login form does not slow anyone down.
MIN_SERVE_TOKEN = 16


class InvalidSetting(UserError, ValidationError):
    """A setting's value is refused: still pydantic's ValidationError, and a
    user error said as one line naming the first value refused."""

    @classmethod
    def of(cls, exc: ValidationError) -> "InvalidSetting":
        return cls.from_exception_data(exc.title, exc.errors(include_url=False))

    @property
    def line(self) -> str:
        first = self.errors()[0]
        return (f"invalid setting {'.'.join(map(str, first['loc']))}: "
                f"{first['msg'].removeprefix('Value error, ')}")


class _Settings(BaseSettings):
    """What every settings class shares: read from the environment and
    `.env`; a refused value is an InvalidSetting naming it; every secret it
    holds (SecretStr fields, credentials in `url_fields`) is known to
    redaction from the moment it is configured, so that no log line, stored
    text or message can carry it."""

    url_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise InvalidSetting.of(exc) from None  # the same errors, one level

    def model_post_init(self, context) -> None:
        register(self.secret_values())

    def secret_values(self) -> tuple[str, ...]:
        """Every configured secret: SecretStr fields and the credential parts of URL fields."""
        values = [value.get_secret_value() for name in type(self).model_fields
                  if isinstance(value := getattr(self, name), SecretStr)]
        for url in self._urls():
            values += url_credentials(url)
        return tuple(v for v in dict.fromkeys(values) if v)

    def _urls(self) -> list[str | None]:
        return [self.model_dump(include=set(self.url_fields)).get(name) for name in self.url_fields]


class SettingsSection(_Settings):
    """Settings a module declares beside its code (a search provider's key
    or URL), read from the same environment and `.env` as Settings; a
    Settings object hands out each section once (Settings.section), and
    knows the secrets of every section declared in the modules loaded."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.model_fields:  # not a base without settings of its own
            _DECLARED_SECTIONS.append(cls)


_DECLARED_SECTIONS: list[type[SettingsSection]] = []


S = TypeVar("S", bound=SettingsSection)


class Settings(_Settings):
    model_config = SettingsConfigDict(
        env_prefix="SEARCHLAKE_", env_file=".env", extra="ignore", populate_by_name=True
    )
    url_fields = URL_FIELDS

    _sections: dict[type, SettingsSection] = PrivateAttr(default_factory=dict)
    _source: dict[str, Any] | None = PrivateAttr(default=None)

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        # where the values came from, for the sections read alongside
        self._source = {name: values[name] for name in ("_env_file", "_env_file_encoding") if name in values}
        register(self.secret_values())  # the sections' too

    def section(self, cls: type[S]) -> S:
        """The settings `cls` declares, read from the same environment and
        `.env` as these (once per Settings object)."""
        if cls not in self._sections:
            self._sections[cls] = cls(**(self._source or {}))
        return self._sections[cls]  # type: ignore[return-value]

    def with_sections(self, *sections: SettingsSection) -> "Settings":
        """A copy of these settings whose sections are `sections` rather than
        what the environment says (a caller's own values)."""
        copy = self.model_copy()
        copy._sections = {**self._sections, **{type(section): section for section in sections}}
        return copy

    def sections(self) -> list[SettingsSection]:
        """Every settings section declared in the modules loaded (each
        provider's own settings, once its module is loaded), as these
        settings read them."""
        return [self.section(cls) for cls in dict.fromkeys([*_DECLARED_SECTIONS, *self._sections])]

    def secret_values(self) -> tuple[str, ...]:
        """Every configured secret of these settings and of every section
        declared (a provider's key, once its module is loaded)."""
        values = [*super().secret_values(), *connection_string_passwords(self.catalog)]
        if self._source is not None:  # not while pydantic is still building these settings
            for cls in [*_DECLARED_SECTIONS, *self._sections]:
                values += self.section(cls).secret_values()
        return tuple(v for v in dict.fromkeys(values) if v)

    home: Path = Field(default=Path("data"), description="Holds the lake and the catalog")
    lake: str | None = Field(default=None, description=(
        "Lake root: a folder or an fsspec URL, e.g. s3://bucket/prefix (install the `s3` extra); "
        "unset: $SEARCHLAKE_HOME/lake"))
    catalog: str | None = Field(default=None, description=(
        "The DuckLake catalog: a file (embedded, one machine): SQLite when it is named sqlite:PATH or "
        "ends in .sqlite, else a DuckDB file; or DuckLake's metadata connection string, "
        "e.g. postgres:dbname=lake host=db user=searchlake; unset: $SEARCHLAKE_HOME/catalog.sqlite"))
    lock_timeout: float = Field(default=30.0, ge=0, description=(
        "Seconds a command waits for a busy catalog, trying again after growing pauses, before it says it is busy"))
    sql_timeout: float = Field(default=300.0, gt=0, description=(
        "Seconds an analyst's `searchlake sql` command may take, its output included"))
    sql_max_rows: int = Field(default=1_000_000, ge=1, description=(
        "The most rows `searchlake sql` returns; a larger result is refused (add a LIMIT, or read the lake's "
        "Parquet exports)"))
    sql_max_mb: float = Field(default=256.0, gt=0, description=(
        "The most megabytes of cell text `searchlake sql` returns; a larger result is refused"))
    sql_memory_mb: int = Field(default=2048, ge=256, description=(
        "Megabytes of memory a `searchlake sql` command may use; the engine spills sorts and joins to disk "
        "past half of it, and a query needing more is stopped"))
    # Validating a bundle takes several times its size in memory (parsed JSON,
    # models, Arrow columns), in each worker; what searchlake's own searches
    # write is a few MB at most.
    max_bundle_bytes: int = Field(default=64 << 20, ge=1024, description=(
        "`ingest` refuses a bundle file larger than this many bytes without reading it (too_large)"))
    # an s3:// lake: the usual AWS variables, read by the engine and by s3fs alike
    aws_access_key_id: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AWS_ACCESS_KEY_ID"),
                                                description="An s3:// lake's access key id")
    aws_secret_access_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices(
        "AWS_SECRET_ACCESS_KEY"), description="An s3:// lake's secret key")
    aws_session_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("AWS_SESSION_TOKEN"),
                                                description="An s3:// lake's session token")
    aws_region: str | None = Field(default=None, validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION"),
                                   description="An s3:// lake's region")
    aws_endpoint_url: str | None = Field(default=None, validation_alias=AliasChoices("AWS_ENDPOINT_URL",
                                                                                      "AWS_ENDPOINT_URL_S3"),
                                         description="An S3-compatible store's endpoint, e.g. http://minio:9000")

    weight_relevance: float = Field(default=0.6, ge=0, description="Weight of score_relevance in score_final")
    weight_freshness: float = Field(default=0.2, ge=0, description="Weight of score_freshness in score_final")
    weight_authority: float = Field(default=0.2, ge=0, description="Weight of score_authority in score_final")
    scoring_file: Path | None = Field(default=None, description="JSON changing freshness windows and authority domains")

    # a research run's budget, as typed: validated by schemas.governance.Budget when a run
    # resolves it, so that a bad value fails that run (with its name), not every command
    pipeline_timeout: str | None = Field(default=None, validation_alias=AliasChoices("PIPELINE_TIMEOUT"), description=(
        "A research run's time budget in seconds (at least 30; unset: 1800); --timeout wins"))
    pipeline_max_target_count: str | None = Field(default=None, validation_alias=AliasChoices(
        "PIPELINE_MAX_TARGET_COUNT"), description="The most sources --target may ask for (1-200; unset: 10)")
    pipeline_max_fallback_rounds: str | None = Field(default=None, validation_alias=AliasChoices(
        "PIPELINE_MAX_FALLBACK_ROUNDS"), description=(
        "Searches again with unused keywords when too few sources pass the filters (0-5; unset: 1)"))

    # research
    library: Path | None = Field(default=None, description=(
        "Folder of the user's documents for the `library` provider (unset: Python's own documentation)"))
    providers: str | None = Field(default=None, description=(
        "Comma list of providers a research run uses (unset: every configured one)"))
    max_results: int = Field(default=10, ge=1, le=50, description="Results per provider per query")
    target_count: int = Field(default=10, ge=1, le=200, validation_alias=AliasChoices(
        "PIPELINE_TARGET_COUNT", "SEARCHLAKE_TARGET_COUNT"), description="Sources a research run selects")
    max_queries_per_intent: int = Field(default=3, ge=1, le=20, description=(
        "Planned queries per intent (academic, news, web, library)"))
    content_max_chars: int = Field(default=20_000, ge=200, le=MAX_CONTENT_CHARS, description=(
        "content_text is truncated to this many characters; quotes come only from what is kept"))
    http_timeout: float = Field(default=20.0, gt=0, description=(
        "Seconds per outbound call (providers, page fetches, `ask`; the LLM has SEARCHLAKE_LLM_TIMEOUT); a page "
        "fetch has one deadline of twice this for everything"))
    http_retries: int = Field(default=1, ge=0, le=5, description=(
        "Retries on 429, 5xx and timeouts, after Retry-After (capped at 30 s) or an exponential backoff"))
    provider_concurrency: int = Field(default=4, ge=1, le=64, description=(
        "Calls in flight per provider (arXiv: always 1, one call per 3 s)"))
    fetch_content: bool = Field(default=False, description=(
        "Fetch the page text of the top results that came with a snippet only"))
    fetch_top: int = Field(default=3, ge=0, le=50, description="How many top results the content fetch reads")
    allow_private_fetch: bool = Field(default=False, description=(
        "Let the fetcher reach private, loopback and link-local addresses"))
    run_heartbeat_seconds: float = Field(default=15.0, gt=0, le=600, description=(
        "A research run in progress records a heartbeat this often (seconds); a run with no sign of life for "
        "4 heartbeats reads as interrupted"))

    # LLM (any OpenAI-compatible endpoint)
    llm_base_url: str | None = Field(default=None, description=(
        "Any OpenAI-compatible chat endpoint (OpenRouter, DashScope compatible mode, Ollama, vLLM); with its "
        "key and model, used for planning, screening, review and synthesis"))
    llm_api_key: SecretStr | None = Field(default=None, description="The LLM endpoint's key")
    llm_model: str | None = Field(default=None, description="The LLM endpoint's model")
    # every model call is bounded (docs/local-models.md): its answer, its time, and the run's spending
    llm_timeout: float = Field(default=60.0, gt=0, description=(
        "Seconds a model call may take, its whole answer included; a call that timed out is not tried again"))
    llm_max_tokens_plan: int = Field(default=1024, ge=16, description=(
        "The most tokens the model may write for a research plan (max_tokens)"))
    llm_max_tokens_screen: int = Field(default=512, ge=16, description=(
        "The most tokens the model may write to screen a batch of 20 titles"))
    llm_max_tokens_review: int = Field(default=1024, ge=16, description=(
        "The most tokens the model may write to review a batch of 10 sources"))
    llm_max_tokens_synthesis: int = Field(default=4096, ge=16, description=(
        "The most tokens the model may write for a report's synthesis"))
    llm_max_tokens_model: int = Field(default=2048, ge=16, description=(
        "The most tokens the model may write for a report's model (drivers, scenarios, metrics)"))
    llm_run_seconds: float = Field(default=600.0, gt=0, description=(
        "Seconds of model calls a run may spend in all; then its later stages run without the model"))
    llm_run_tokens: int = Field(default=200_000, ge=1, description=(
        "Tokens (prompts and answers, as the endpoint counts them) a run may spend; then its later stages run "
        "without the model"))
    llm_max_failures: int = Field(default=1, ge=1, description=(
        "After this many model calls that timed out or failed, a run calls the model no more"))
    llm_max_unusable: int = Field(default=2, ge=1, description=(
        "After this many answers a run could not use, it calls the model no more"))
    llm_structured_output: bool = Field(default=True, description=(
        "Ask for JSON by response_format (a JSON schema); an endpoint that refuses it is asked without, for "
        "the rest of the run"))

    # `searchlake ask` (OpenRouter); the search providers declare their own settings beside their code
    openrouter_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENROUTER_API_KEY", "SEARCHLAKE_OPENROUTER_API_KEY"),
        description="Enables `searchlake ask` and the page's ask box")
    openrouter_base_url: str = Field(
        default="https://openrouter.ai/api/v1",
        validation_alias=AliasChoices("OPENROUTER_BASE_URL", "SEARCHLAKE_OPENROUTER_BASE_URL"),
        description="OpenRouter's API, for `ask`")

    # single-shot search + summary (`searchlake ask`, tasks/ask/single_shot.py); each is overridable per call
    ask_model: str = Field(default="openai/gpt-4o-mini", description="OpenRouter model for `ask`")
    ask_max_results: int = Field(default=5, ge=0, le=10, description="Web results per ask (0-10)")
    ask_search_context_size: str = Field(default="high", pattern="^(low|medium|high)$", description=(
        "Web search context size per ask: low, medium or high (higher costs more)"))
    ask_web_search: str = Field(default="plugin", pattern="^(plugin|server_tool)$",
                                description="plugin: plugins:[{id:web}]; server_tool: openrouter:web_search")
    ask_max_cost: float | None = Field(default=0.05, ge=0, description="USD per ask; above it the run fails")
    ask_timeout: float = Field(default=60.0, gt=0, description="Seconds per OpenRouter request")
    ask_retry_after_max: float = Field(default=10.0, ge=0, description="Cap on a Retry-After wait, seconds")

    # `searchlake serve`: the page and the progress-event stream, on the loopback unless told otherwise
    serve_host: str = Field(default="127.0.0.1", description="Address `searchlake serve` binds to")
    serve_port: int = Field(default=8765, ge=0, le=65535, description="Port of `searchlake serve` (0: a free one)")
    autoserve: bool = Field(default=True, description="`research` starts a background `serve` to run in")
    serve_idle_minutes: float = Field(default=15.0, gt=0,
                                      description="A background `serve` stops after this long with nothing to do")
    read_ahead_texts: int = Field(default=20_000, ge=0, description=(
        "A server reads this many passages and sentences of a run's library with the sentence model while "
        "idle, so that later questions find them read (0: none)"))
    serve_max_body_bytes: int = Field(default=1_000_000, ge=1024,
                                      description="`serve` refuses a request body larger than this (413)")
    serve_request_timeout: float = Field(default=10.0, gt=0, description=(
        "Seconds a client has to send `serve` a request's headers and body; a slower one's connection is "
        "closed (slowloris)"))
    serve_token: SecretStr | None = Field(default=None, description=(
        f"Every request to `serve` must carry it ({MIN_SERVE_TOKEN}+ characters); needed to serve beyond the loopback"))
    serve_allowed_hosts: Annotated[list[str], NoDecode] = Field(default=[], description=(
        "Host names `serve` answers to besides the loopback ones and its address (comma list)"))
    serve_libraries: Annotated[list[Path], NoDecode] = Field(default=[], description=(
        f"Library folders the page may search besides SEARCHLAKE_LIBRARY ('{os.pathsep}' between them)"))

    @field_validator("serve_token")
    @classmethod
    def _token_long_enough(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None and len(token.get_secret_value()) < MIN_SERVE_TOKEN:
            raise ValueError(f"must be at least {MIN_SERVE_TOKEN} characters, e.g. from "
                             "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")
        return token

    @field_validator("serve_allowed_hosts", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("serve_libraries", mode="before")
    @classmethod
    def _path_list(cls, value: Any) -> Any:
        return [part for part in value.split(os.pathsep) if part.strip()] if isinstance(value, str) else value

    def budget(self, overrides: Mapping[str, Any] | None = None,
               option_names: Mapping[str, str] | None = None) -> Budget:
        """The run budget: options (`overrides`) over the PIPELINE_* variables over the defaults."""
        environ = {variable: getattr(self, "pipeline_" + name.removesuffix("_seconds"))
                   for name, variable in BUDGET_VARIABLES.items()}
        return Budget.resolve(overrides, environ, option_names)

    def scoring_overrides(self) -> ScoringFile | None:
        """SEARCHLAKE_SCORING_FILE, read and validated; None when unset.
        Raises ValueError naming the file and the first problem."""
        return None if self.scoring_file is None else _read_scoring_file(str(self.scoring_file))

    @cached_property
    def lake_root(self) -> str:
        return self.lake or str(self.home / "lake")

    @cached_property
    def sentence_vectors_path(self) -> Path:
        """Where the sentence model's vectors are kept (tasks/common/vector_store.py)."""
        return self.home / "cache" / "sentence-vectors.sqlite"

    @cached_property
    def catalog_is_embedded(self) -> bool:
        """A catalog file on this machine (not a database server's connection string)."""
        return not _CATALOG_SERVER.match(self.catalog or "")

    @cached_property
    def catalog_is_sqlite(self) -> bool:
        """An embedded catalog in a SQLite file (the default); otherwise a DuckDB file."""
        if not self.catalog_is_embedded:
            return False
        if self.catalog:
            return bool(_SQLITE_PREFIX.match(self.catalog)) or self.catalog.lower().endswith(SQLITE_SUFFIXES)
        return self.catalog_path.name == DEFAULT_CATALOG_FILE

    @cached_property
    def catalog_path(self) -> Path:
        """The embedded catalog's file (only meaningful when catalog_is_embedded).
        Unconfigured, it is the home's SQLite catalog, unless the home only has
        the DuckDB-file catalog of an earlier version."""
        if self.catalog:
            return Path(_SQLITE_PREFIX.sub("", self.catalog))
        earlier, default = self.home / DUCKDB_CATALOG_FILE, self.home / DEFAULT_CATALOG_FILE
        return earlier if earlier.exists() and not default.exists() else default

    @cached_property
    def catalog_is_earlier_file(self) -> bool:
        """Unconfigured, and the home only has the DuckDB-file catalog of an
        earlier version (`searchlake migrate-catalog` moves it to SQLite)."""
        return not self.catalog and self.catalog_path.name == DUCKDB_CATALOG_FILE

    @cached_property
    def catalog_shown(self) -> str:
        """The catalog as it may be printed (no password)."""
        return str(self.catalog_path) if self.catalog_is_embedded else redact(self.catalog_location)

    @cached_property
    def catalog_location(self) -> str:
        """What DuckLake's ATTACH takes after `ducklake:`."""
        if not self.catalog_is_embedded:
            return str(self.catalog)
        return f"sqlite:{self.catalog_path}" if self.catalog_is_sqlite else str(self.catalog_path)


@lru_cache(maxsize=8)
def _read_scoring_file(path: str) -> ScoringFile:
    try:
        return ScoringFile.model_validate_json(Path(path).read_bytes())
    except OSError as exc:
        raise ValueError(f"scoring file {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the file"
        raise ValueError(f"scoring file {path}: {where}: {first['msg']}") from None


def secret_value(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret else None


def research_settings(library: str | None = None, providers: list[str] | None = None,
                      max_results: int | None = None) -> Settings:
    """Settings with a research command's options laid over the environment."""
    overrides: dict = {}
    if library is not None:
        overrides["library"] = library
    if providers:
        overrides["providers"] = ",".join(providers)
    if max_results is not None:
        overrides["max_results"] = max_results
    return Settings(**overrides)
