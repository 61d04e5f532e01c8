"""Where a running `searchlake serve` can be found, so that `searchlake
research` hands its run to it instead of paying for Prefect's start-up again.

The server writes `<home>/serve.json` ({url, pid, fingerprint, key}) when it
starts and removes it when it stops. A command uses that server only when
the process is alive, it answers, and it was started with the same settings
(the fingerprint: a hash over every setting a run reads, secrets included, so a key set
in one shell and not the other means "run here" — never "run without the
key"). Light on purpose: no web framework is imported here."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from tasks.common.processes import alive
from tasks.common.settings import Settings

RECORD = "serve.json"
# How a server is started, reached and stopped, not how it runs research: left out of the fingerprint.
SERVER_ONLY = frozenset({name for name in Settings.model_fields if name.startswith("serve_")} | {"autoserve"})


def fingerprint(settings: Settings) -> str:
    values = {name: value.get_secret_value() if isinstance(value, SecretStr) else value
              for name, value in settings.model_dump().items() if name not in SERVER_ONLY}
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()


def record_path(settings: Settings) -> Path:
    return Path(settings.home) / RECORD


def new_key() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class ServeRecord:
    url: str
    pid: int
    fingerprint: str
    # Only the user running the server can read the record (mode 0600), so a
    # request carrying this key comes from that user: it needs no
    # SEARCHLAKE_SERVE_TOKEN and may name any library folder, one it could read anyway.
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def write(self, settings: Settings) -> None:
        path = record_path(settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{RECORD}.{os.getpid()}")
        tmp.unlink(missing_ok=True)  # a leftover would keep its own mode
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            handle.write(json.dumps(self.__dict__))
        tmp.replace(path)

    @classmethod
    def read(cls, settings: Settings) -> "ServeRecord | None":
        """The record of a live server of this home, None when there is none."""
        try:
            doc = json.loads(record_path(settings).read_text())
            record = cls(str(doc["url"]), int(doc["pid"]), str(doc["fingerprint"]), str(doc["key"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return record if alive(record.pid) else None


def remove_record(settings: Settings, pid: int) -> None:
    """Remove the record if it is still this process's own."""
    record = ServeRecord.read(settings)
    if record is None or record.pid == pid:
        record_path(settings).unlink(missing_ok=True)
