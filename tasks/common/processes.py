"""Whether the process that started something still runs. A pid alone does
not say: once its process ends, the system gives the pid to another one, so
a process is known by its host, its pid and when it started."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


def alive(pid: int) -> bool:
    """A process with this pid runs on this host (whichever process it is)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def started(pid: int) -> str | None:
    """When the process started, as the kernel counts it (Linux:
    /proc/<pid>/stat, field 22); None where that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    started: str | None  # None: the start time could not be read; the pid alone decides

    @classmethod
    def current(cls) -> "ProcessIdentity":
        return cls(socket.gethostname(), os.getpid(), started(os.getpid()))

    def ended(self) -> bool:
        """Known to have ended: a process of this host whose pid runs no
        more, or now runs a process that started at another time. A process
        of another host cannot be judged from here: False."""
        if self.host != socket.gethostname():
            return False
        if not alive(self.pid):
            return True
        return self.started is not None and started(self.pid) != self.started

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"
