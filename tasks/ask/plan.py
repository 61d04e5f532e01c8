"""What one ask (docs/ask.md) will do: the settings and per-call options
resolved into an AskPlan, plus the errors an ask raises.

The errors live here, below both tasks.ask.openrouter and tasks.ask.single_shot, because
planning already raises AskError and tasks.ask.single_shot must not be imported by the
modules it uses.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timezone

from schemas.ask import AskOptions
from tasks.common.settings import Settings
from schemas.errors import InternalError


class AskError(InternalError):
    """The ask failed; the message is one line fit for the user."""

    def __init__(self, message: str, *, message_id: str | None = None, status: str = "failed"):
        super().__init__(message)
        self.message_id = message_id
        self.status = status


class AskBudgetExceeded(AskError):
    """The answer cost more than the cap."""

    user_error = True


@dataclass(frozen=True)
class AskPlan:
    question: str
    model: str
    engine: str
    search_mode: str
    search_context_size: str
    max_results: int
    max_cost: float | None
    timeout: float
    task_id: str
    message_id: str
    query_id: str
    created_at: datetime


def plan_ask(question: str, options: AskOptions, settings: Settings, now: datetime | None = None) -> AskPlan:
    """Settings give the defaults, options override them per call."""
    question = question.strip()
    if not question:
        raise AskError("the question is empty")
    now = now or datetime.now(timezone.utc)
    message_id = secrets.token_hex(16)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    return AskPlan(
        question=question,
        model=options.model or settings.ask_model,
        engine=options.engine,
        search_mode=options.search_mode or settings.ask_web_search,
        search_context_size=options.search_context_size or settings.ask_search_context_size,
        max_results=settings.ask_max_results if options.max_results is None else options.max_results,
        max_cost=options.max_cost if options.max_cost is not None else settings.ask_max_cost,
        timeout=options.timeout or settings.ask_timeout,
        task_id=options.task_id or f"ask-{stamp}-{message_id[:4]}",
        # unique within a task, and in time order when one task holds many asks
        query_id=f"ask-{now.strftime('%Y%m%d%H%M%S%f')}-{message_id[:6]}",
        message_id=message_id,
        created_at=now,
    )
