"""Single-shot "search + summary" (docs/ask.md): per-call options, the parsed
citations, and what `ask` returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.bundle import Identifier

ContextSize = Literal["low", "medium", "high"]
# "auto" leaves the engine out of the request: OpenRouter then uses the
# model's native search when it has one, Exa otherwise; users get no engine option.
Engine = Literal["auto", "native", "exa"]
# plugin: `plugins: [{"id": "web"}]` + `web_search_options` (the default form);
# server_tool: `tools: [{"type": "openrouter:web_search"}]`, OpenRouter's newer form.
SearchMode = Literal["plugin", "server_tool"]
AskStatus = Literal["ok", "failed", "over_budget"]


class AskOptions(BaseModel):
    """Per-call overrides; None means "use the setting" (SEARCHLAKE_ASK_*)."""

    model_config = ConfigDict(extra="forbid")

    max_results: int | None = Field(default=None, ge=0, le=10)
    search_context_size: ContextSize | None = None
    search_mode: SearchMode | None = None
    # For maintainers and tests; engine choice is kept away from users (OpenRouter
    # picks the best available), so the CLI does not offer it.
    engine: Engine = "auto"
    model: str | None = Field(default=None, min_length=1)
    max_cost: float | None = Field(default=None, ge=0)
    timeout: float | None = Field(default=None, gt=0)
    task_id: Identifier | None = None


class UrlCitation(BaseModel):
    """One `url_citation` annotation of the answer."""

    citation_id: str
    position: int
    url: str
    title: str = ""
    content: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    domain: str = ""
    fetched_at: datetime


class AskResult(BaseModel):
    message_id: str
    task_id: str
    query_id: str
    question: str
    answer: str
    citations: list[UrlCitation]
    no_citations: bool
    model: str
    engine: Engine
    search_mode: SearchMode
    search_context_size: ContextSize
    max_results: int
    request_count: int
    cost: float | None
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int
    status: AskStatus
    created_at: datetime

    def line(self) -> str:
        """A one-line summary for the command line."""
        cost = "unknown cost" if self.cost is None else f"${self.cost:.4f}"
        cited = "no citations (queued for review)" if self.no_citations else f"{len(self.citations)} citations"
        return (f"task {self.task_id}: {cited}, {self.request_count} request(s), {cost}, "
                f"engine {self.engine}, context {self.search_context_size}, max_results {self.max_results}")
