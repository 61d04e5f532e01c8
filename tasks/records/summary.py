"""What a run prints at its end (`RunSummary`): read from the lake's `runs`
row, or from the run's last progress event, which carries the same summary
so that a command following a run in `searchlake serve` prints it without
opening the lake (DuckDB, its extensions and the catalog: most of a second).

No import here opens the lake: `searchlake research` imports this module
whichever way it reads the summary."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tasks.common.model_use import spending
from tasks.common.settings import Settings
from tasks.common.text import counted


@dataclass
class RunSummary:
    """What a run prints at its end: trace id, policy source, counts, stage history, outputs."""

    trace_id: str
    task_id: str
    status: str
    policy_source: str | None = None
    candidate_count: int = 0
    filtered_count: int = 0
    publisher_count: int = 0
    elapsed_seconds: float = 0.0
    stage_history: list[dict] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def exit_code(self) -> int:
        """0 for a complete run, 1 otherwise (failed, timed out, interrupted)."""
        return 0 if self.status == "complete" else 1

    def lines(self) -> list[str]:
        out = [
            f"trace id:      {self.trace_id}",
            f"task id:       {self.task_id}",
            f"status:        {self.status}",
            f"policy source: {self.policy_source or '-'}",
            f"candidates:    {self.candidate_count}",
            f"filtered:      {self.filtered_count}",
            f"publishers:    {self.publisher_count}",
            f"elapsed:       {self.elapsed_seconds:.1f} s",
            "stages:",
        ]
        for stage in self.stage_history:
            seconds = stage.get("seconds")
            timing = f" {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
            out.append(f"  {stage.get('name')}: {stage.get('status')} (attempt {stage.get('attempt', 1)}){timing}")
        if not self.stage_history:
            out.append("  (none)")
        out.append("outputs:" if self.outputs else "outputs:       (none)")
        # the model's record in numbers: why the run gave up on it is its own line (without_model)
        out += [f"  {name}: {spending(value) if name == 'model' else _shown(value)}"
                for name, value in self.outputs.items()]
        if self.error:
            out.append(f"error:         {self.error}")
        return out

    @property
    def without_model(self) -> str | None:
        """Why the run gave up on its model and which stages ran without it; None when it did not."""
        model = self.outputs.get("model")
        return model.get("without_model") if isinstance(model, dict) else None

    def headline(self) -> str:
        """How the run ended, how long it took and what it found, in one line."""
        return (f"{self.status} in {self.elapsed_seconds:.1f} s — {counted(self.candidate_count, 'candidate source')}, "
                f"{self.filtered_count} selected, {counted(self.publisher_count, 'publisher')}")

    def as_event(self) -> dict[str, Any]:
        """The summary as the run's last progress event carries it."""
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_event(cls, metadata: dict | None) -> "RunSummary | None":
        """The summary a last progress event carries; None when it carries
        none or not one of this shape (the events file is anyone's to write)."""
        given = (metadata or {}).get("summary")
        if not isinstance(given, dict):
            return None
        try:
            summary = cls(**{f.name: given[f.name] for f in fields(cls) if f.name in given})
        except TypeError:
            return None
        kinds = {"trace_id": str, "task_id": str, "status": str, "candidate_count": int, "filtered_count": int,
                 "publisher_count": int, "elapsed_seconds": (int, float), "stage_history": list, "outputs": dict}
        if not all(isinstance(getattr(summary, name), kind) for name, kind in kinds.items()):
            return None
        if not all(isinstance(stage, dict) for stage in summary.stage_history):
            return None
        return summary

    @classmethod
    def load(cls, settings: Settings, trace_id: str) -> "RunSummary | None":
        """The summary of a recorded run, None when there is no such trace."""
        from tasks.lake.catalog import open_catalog
        from tasks.lake.sqlfiles import records
        with open_catalog(settings, "governed run: summary", read_only=True) as catalog:
            rows = records(catalog.run("run_summary", [trace_id]))
        if not rows:
            return None
        row = rows[0]
        return cls(row["trace_id"], row["task_id"], row["status"], row["policy_source"],
                   row["candidate_count"] or 0, row["filtered_count"] or 0, row["publisher_count"] or 0,
                   row["elapsed_seconds"] or 0.0, json.loads(row["stage_history"] or "[]"),
                   json.loads(row["outputs"] or "{}"), row["error"])


def _shown(value) -> str:
    """An output value as a person reads it: no None, no Python repr of a mapping or list."""
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(_shown, value))
    return str(value)
