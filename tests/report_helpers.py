"""Shared by the synthesis, modeling and report tests: sources, a plan, and
an OpenAI-compatible chat endpoint on httpx.MockTransport (no network)."""

from __future__ import annotations

import json

import httpx

from tasks.common.llm import LLMConfig
from tasks.synthesis.base import Source

PACKAGING = [
    ("https://packaging.python.org/guide", "Writing your pyproject.toml",
     "pyproject.toml is a configuration file used by packaging tools. The [build-system] table declares "
     "which build backend builds your project. Project metadata such as name and version lives in the "
     "[project] table."),
    ("https://peps.python.org/pep-0621/", "PEP 621",
     "This PEP specifies how to write a project's core metadata in a pyproject.toml file. "
     "The [project] table holds metadata such as name and version, and tools must read it."),
    ("https://hatch.pypa.io/build", "Hatch build configuration",
     "Hatchling is a build backend.   Build targets are defined as sections\nwithin tool.hatch.build.targets. "
     "The build backend reads the [build-system] table first."),
]


def make_sources(specs=PACKAGING) -> list[Source]:
    return [Source(number=i, source_id=f"src{i}", url=url, title=title, content_text=text, score=0.5)
            for i, (url, title, text) in enumerate(specs, start=1)]


PLAN = {"question": "How is a Python project configured with pyproject.toml?",
        "search_summary": {"interpreted_topic": "pyproject.toml configuration",
                           "key_dimensions": ["build backend", "project metadata", "licensing"]},
        "queries": []}


def chat_completion(content: str, **usage) -> dict:
    return {"id": "c1", "object": "chat.completion", "model": "mock",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage.get("prompt", 100), "completion_tokens": usage.get("completion", 50)}}


def mock_llm(content: str | None = None, status: int = 200, seen: list | None = None) -> httpx.Client:
    """A client whose transport answers every chat completion with `content`."""
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/chat/completions")
        if seen is not None:
            seen.append(json.loads(request.content))
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "overloaded"}})
        return httpx.Response(200, json=chat_completion(content or ""))
    return httpx.Client(transport=httpx.MockTransport(handle))


CONFIG = LLMConfig(base_url="http://llm.test/v1", model="mock-model")


def answer(doc: dict) -> str:
    return f"---THOUGHT---\nI read the sources.\n---JSON---\n{json.dumps(doc, ensure_ascii=False)}"
