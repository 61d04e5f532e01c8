"""`searchlake mcp` as an agent uses it: the real command started by the
SDK's own stdio client against a private lake, one session for the module,
one real research run over a small library of Markdown notes (offline).
Every tool answers with typed data; every mistake comes back as a tool
error of one line and the server goes on; stdout carries the protocol and
nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import copy_of_prefect_home
from tests.mcp_helpers import RESEARCH_TIMEOUT, Progress, mcp_session, text_of
from tests.research_helpers import BUDGET_ENV, PROVIDER_KEYS, QUESTION, write_library

REPO = Path(__file__).resolve().parents[2]
SECRET = "tok-3f9a1c77e2b54d0e"  # the value of a variable named like a token: a secret to keep out of every answer
TOOLS = {"research", "read_report", "list_tasks", "top_sources", "sql"}


def agent_env(root: Path) -> dict[str, str]:
    """What an agent's configuration gives the command: a home, a Prefect home,
    no provider key or budget of the developer's; this checkout's code first."""
    drop = set(PROVIDER_KEYS + BUDGET_ENV + ("PREFECT_API_URL",))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHLAKE_") and k not in drop}
    env.update(SEARCHLAKE_HOME=str(root / "home"), SEARCHLAKE_AUTOSERVE="false",
               PREFECT_HOME=str(root / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               LAKE_TEST_TOKEN=SECRET)
    return env


class Agent:
    def __init__(self, session, root: Path, env: dict[str, str]):
        self.session = session
        self.root = root
        self.env = env
        self.library = write_library(root / "library")
        self.stderr = root / "stderr.log"

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """The same command line, against the same lake."""
        return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True,
                              env=self.env, cwd=self.root, timeout=120)


@pytest.fixture(scope="module")
def agent(tmp_path_factory, migrated_prefect_home):
    root = tmp_path_factory.mktemp("mcp-stdio")
    copy_of_prefect_home(migrated_prefect_home, root / "prefect-home")
    env = agent_env(root)
    server = StdioServerParameters(command=sys.executable, args=["-m", "flows.cli", "mcp"], env=env, cwd=root)
    with open(root / "stderr.log", "w") as stderr, mcp_session(lambda: stdio_client(server, errlog=stderr)) as session:
        yield Agent(session, root, env)


@pytest.fixture(scope="module")
def researched(agent):
    """One research run over the library: (its result, its progress notifications)."""
    progress = Progress()
    result = agent.session.call("research", {"question": QUESTION, "library": str(agent.library), "target": 2},
                                progress, timeout=RESEARCH_TIMEOUT)
    assert not result.is_error, text_of(result)
    return result, progress


def task_of(researched) -> str:
    return researched[0].structured_content["task_id"]


def test_the_tools_have_typed_input_and_output_schemas(agent):
    tools = {tool.name: tool for tool in agent.session.run("list_tools").tools}
    assert set(tools) == TOOLS
    research = tools["research"].input_schema["properties"]
    assert tools["research"].input_schema["required"] == ["question"]
    assert research["question"]["type"] == "string"
    assert {"type": "integer"} in research["target"]["anyOf"] and {"type": "integer"} in research["timeout"]["anyOf"]
    assert {"type": "array", "items": {"type": "string"}} in research["providers"]["anyOf"]
    assert set(research) >= {"library", "task_id", "max_results", "max_target_count", "max_fallback_rounds"}
    assert "ctx" not in research
    assert tools["read_report"].input_schema["properties"]["format"]["enum"] == ["md", "json", "html"]
    assert tools["list_tasks"].input_schema["properties"]["limit"]["minimum"] == 1
    assert tools["sql"].input_schema["required"] == ["query"]
    assert {"task_id", "answer", "report", "status"} <= set(tools["research"].output_schema["properties"])
    assert {"columns", "rows", "row_count", "truncated"} <= set(tools["sql"].output_schema["properties"])
    assert "tasks" in tools["list_tasks"].output_schema["properties"]
    for tool in tools.values():
        assert tool.description and tool.description[0].isupper() and "\n\n" not in tool.description.split(".")[0]
        assert tool.annotations.read_only_hint is (tool.name != "research")


def test_research_answers_with_cited_points_and_a_task_id(researched):
    result, _ = researched
    outcome = result.structured_content
    assert outcome["status"] == "complete" and outcome["task_id"]
    answer = outcome["answer"]
    assert answer["question"] == QUESTION and answer["points"]
    numbers = {source["number"] for source in answer["sources"]}
    assert numbers and all(source["url"].startswith("file://") and source["title"] for source in answer["sources"])
    for point in answer["points"]:
        assert point["citations"] and set(point["citations"]) <= numbers
    assert outcome["report"] == f"searchlake://tasks/{outcome['task_id']}/report.md"
    text = text_of(result)  # the answer as the terminal shows it: numbered citations, then the sources
    assert text.startswith(QUESTION) and "[1]" in text and f"task id: {outcome['task_id']}" in text


def test_research_reports_its_progress_as_it_goes(researched):
    _, progress = researched
    values = [value for value, _, _ in progress.seen]
    assert len(values) > 5 and values == sorted(set(values)) and values[-1] <= 100  # each larger than the last
    assert {total for _, total, _ in progress.seen} == {100}
    messages = [message for _, _, message in progress.seen]
    assert any(m.startswith("searching in parallel: ") for m in messages)
    assert any(m.startswith("gate search_completeness: pass") for m in messages)


def test_read_report_in_each_format_and_as_a_resource(agent, researched):
    task_id = task_of(researched)
    markdown = text_of(agent.session.call("read_report", {"task_id": task_id}))
    assert QUESTION in markdown and "[\\[1\\]](file://" in markdown  # a citation, as Markdown writes it
    assert json.loads(text_of(agent.session.call("read_report", {"task_id": task_id, "format": "json"})))[
        "metadata"]["taskId"] == task_id
    assert "<html" in text_of(agent.session.call("read_report", {"task_id": task_id, "format": "html"})).lower()

    (read,) = agent.session.run("read_resource", f"searchlake://tasks/{task_id}/report.md").contents
    assert read.text == markdown and read.mime_type == "text/markdown"
    templates = {t.uri_template: t for t in agent.session.run("list_resource_templates").resource_templates}
    assert set(templates) == {f"searchlake://tasks/{{task_id}}/report.{fmt}" for fmt in ("md", "json", "html")}
    (index,) = agent.session.run("list_resources").resources
    assert str(index.uri) == "searchlake://tasks"
    listed = json.loads(agent.session.run("read_resource", "searchlake://tasks").contents[0].text)
    assert listed["tasks"][0]["task_id"] == task_id
    assert listed["tasks"][0]["report"] == f"searchlake://tasks/{task_id}/report.md"


def test_list_tasks_and_top_sources(agent, researched):
    task_id = task_of(researched)
    listed = agent.session.call("list_tasks", {"limit": 5}).structured_content
    assert listed["more"] is False
    (task,) = listed["tasks"]
    assert task["task_id"] == task_id and task["question"] == QUESTION
    assert task["runs"] == 1 and task["last_status"] == "complete" and task["last_run_at"]

    top = agent.session.call("top_sources", {"task_id": task_id, "limit": 3}).structured_content
    assert top["task_id"] == task_id
    assert [source["final_rank"] for source in top["sources"]] == [1, 2, 3]
    assert all(source["url"].startswith("file://") and 0 <= source["score"] <= 1 for source in top["sources"])


def test_sql_answers_columns_and_json_rows(agent, researched):
    task_id = task_of(researched)
    counted = agent.session.call("sql", {"query": f"select count(*) as n from consolidated where task_id = '{task_id}'"})
    assert counted.structured_content["columns"] == ["n"] and counted.structured_content["rows"][0][0] >= 3
    values = agent.session.call("sql", {"query": "select [1, 2] as l, {'a': 1} as s, timestamp '2026-01-01 10:00' as t, "
                                                 "'nan'::double as x"}).structured_content
    assert values["rows"] == [[[1, 2], {"a": 1}, "2026-01-01T10:00:00", None]]
    capped = agent.session.call("sql", {"query": "select * from range(5)", "max_rows": 2}).structured_content
    assert capped["rows"] == [[0], [1]] and capped["row_count"] == 5 and capped["truncated"] is True
    masked = agent.session.call("sql", {"query": f"select '{SECRET}' as s"})
    assert masked.structured_content["rows"] == [["***"]] and SECRET not in text_of(masked)


@pytest.mark.parametrize("query", ["select current_setting('threads')", "select * from read_csv('/etc/passwd')",
                                   "create table lake.main.mine (a int)", "select cast('x' as int)"])
def test_sql_refuses_what_searchlake_sql_refuses_in_the_same_line(agent, query):
    refused = agent.session.call("sql", {"query": query})
    assert refused.is_error
    done = agent.cli("sql", query)  # the same sandbox: the command's one line, word for word
    assert done.returncode == 2 and done.stderr == f"error: {text_of(refused)}\n"
    assert agent.session.call("list_tasks").is_error is False  # and the server goes on


USER_ERRORS = [
    ("top_sources", {"task_id": "no-such-task"}, "task 'no-such-task' has no bundles in the lake"),
    ("read_report", {"task_id": "no-such-task"}, "no report has been published for task 'no-such-task'"),
    ("read_report", {"task_id": "../etc"}, "invalid task_id '../etc': must be 1-128 letters"),
    ("list_tasks", {"limit": 0}, "bad argument limit: Input should be greater than or equal to 1"),
    ("read_report", {"task_id": "t", "format": "pdf"}, "bad argument format: Input should be 'md', 'json' or 'html'"),
    ("research", {}, "bad argument question: Field required"),
    ("research", {"question": "  "}, "the question is empty"),
    ("research", {"question": QUESTION, "target": 0}, "target must be at least 1, not 0"),
    ("research", {"question": QUESTION, "timeout": 10}, "timeout=10 is out of range"),
    ("research", {"question": QUESTION, "providers": ["goggle"]}, "unknown provider 'goggle'"),
    ("research", {"question": QUESTION, "providers": ["tavily"]}, "cannot start: tavily needs TAVILY_API_KEY"),
    ("research", {"question": QUESTION, "library": "/no/such/folder"}, "'/no/such/folder' does not exist"),
    ("sql", {"query": "  "}, "the SQL is empty"),
]


@pytest.mark.parametrize("tool, arguments, said", USER_ERRORS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(USER_ERRORS)])
def test_a_users_mistake_is_a_tool_error_of_one_line(agent, tool, arguments, said):
    result = agent.session.call(tool, arguments)
    assert result.is_error
    text = text_of(result)
    assert said in text and "\n" not in text
    assert not text.startswith("Error executing tool") and "Traceback" not in text


def test_a_run_a_gate_stops_is_a_tool_error_saying_why(agent, researched):
    result = agent.session.call("research", {"question": "Which whales sing the longest songs?", "target": 10,
                                             "library": str(agent.library), "task_id": "few-whales"},
                                timeout=RESEARCH_TIMEOUT)
    assert result.is_error
    text = text_of(result)
    assert text.startswith("the research run of task few-whales failed: ") and "\n" not in text
    assert "the search found only" in text and "research again with task_id few-whales to resume" in text


def test_an_unknown_report_is_no_such_resource(agent):
    with pytest.raises(MCPError, match="no report has been published for task 'no-such-task'"):
        agent.session.run("read_resource", "searchlake://tasks/no-such-task/report.md")
    assert agent.session.call("list_tasks").is_error is False


def test_stdout_carried_only_the_protocol_and_stderr_no_secret_or_traceback(agent, researched):
    # Last in the module: the whole session (a research run and Prefect's server with it) is behind it.
    assert agent.session.stray == []
    logged = agent.stderr.read_text()
    assert SECRET not in logged and "Traceback" not in logged
