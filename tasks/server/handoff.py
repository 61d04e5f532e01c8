"""Where the running `searchlake serve` processes of a home can be found, so
that `searchlake research` hands its run to one of the same settings instead
of paying for Prefect's start-up again.

Each server writes `<home>/serve-<pid>.json` ({url, pid, fingerprint, key,
salt}, readable by its user only) when it starts and removes it when it
stops. A command uses a server only when the process is alive, it answers,
and it was started with the same settings: its fingerprint, an HMAC under
the server's own random salt over every value a research run reads from the
settings — every field of Settings but how a server is started, reached and
stopped, every provider's own settings (its key or URL), and the Prefect API
the run reports to. Secrets are in it, so a key set in one shell and not in
the other means another server, never "run without the key"; keyed by a salt
no other server shares, the fingerprint says nothing about them to whoever
sees it without the record. Servers of other settings run beside it, each
found by the commands of its own settings. Light on purpose: no web
framework is imported here."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tasks.common.processes import alive
from tasks.common.settings import Settings

RECORD_PREFIX = "serve-"
# How a server is started, reached and stopped, not how it runs research: left out of the fingerprint.
SERVER_ONLY = frozenset({name for name in Settings.model_fields if name.startswith("serve_")} | {"autoserve"})
# Prefect's own settings that change where a run is recorded (a background server inherits them).
PREFECT_VARIABLES = ("PREFECT_API_URL",)


def run_values(settings: Settings) -> dict[str, Any]:
    """Every value a research run reads from these settings: each field (but
    SERVER_ONLY) and each field of every settings section declared in the
    modules loaded (a provider's key or URL; load the provider registry
    first), secrets in clear — to be hashed, never kept or shown."""
    values = {name: value for name, value in settings.model_dump().items() if name not in SERVER_ONLY}
    for section in settings.sections():
        values |= {f"{type(section).__name__}.{name}": value for name, value in section.model_dump().items()}
    values |= {name: os.environ.get(name) for name in PREFECT_VARIABLES}
    return {name: value.get_secret_value() if isinstance(value, SecretStr) else value
            for name, value in values.items()}


def fingerprint(settings: Settings, salt: str) -> str:
    """HMAC-SHA256 under `salt` of run_values(settings)."""
    payload = json.dumps(run_values(settings), sort_keys=True, default=str).encode()
    return hmac.new(salt.encode(), payload, hashlib.sha256).hexdigest()


def new_key() -> str:
    return secrets.token_urlsafe(32)


def record_path(settings: Settings, pid: int) -> Path:
    return Path(settings.home) / f"{RECORD_PREFIX}{pid}.json"


@dataclass(frozen=True)
class ServeRecord:
    url: str
    pid: int
    fingerprint: str
    # Only the user running the server can read the record (mode 0600), so a
    # request carrying this key comes from that user: it needs no
    # SEARCHLAKE_SERVE_TOKEN and may name any library folder, one it could read anyway.
    key: str
    salt: str  # the fingerprint's key: never sent, so a fingerprint seen in a request gives nothing away

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def serves(self, settings: Settings) -> bool:
        """Whether this server runs research with `settings`."""
        return hmac.compare_digest(self.fingerprint.encode(), fingerprint(settings, self.salt).encode())

    def write(self, settings: Settings) -> None:
        path = record_path(settings, self.pid)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.unlink(missing_ok=True)  # a leftover would keep its own mode
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            handle.write(json.dumps(self.__dict__))
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> "ServeRecord | None":
        """The record at `path` if its server is alive; a dead server's is removed."""
        try:
            doc = json.loads(path.read_text())
            record = cls(str(doc["url"]), int(doc["pid"]), str(doc["fingerprint"]), str(doc["key"]),
                         str(doc["salt"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not alive(record.pid):
            path.unlink(missing_ok=True)
            return None
        return record

    @classmethod
    def of(cls, settings: Settings, pid: int) -> "ServeRecord | None":
        """The record of the live server `pid` of this home."""
        return cls.read(record_path(settings, pid))

    @classmethod
    def running(cls, settings: Settings) -> list["ServeRecord"]:
        """The records of the live servers of this home, newest first."""
        paths = sorted(Path(settings.home).glob(f"{RECORD_PREFIX}*.json"), key=_modified, reverse=True)
        return [record for path in paths if (record := cls.read(path)) is not None]


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def remove_record(settings: Settings, pid: int) -> None:
    """Remove the record of the server `pid` (this process, as it stops)."""
    record_path(settings, pid).unlink(missing_ok=True)
