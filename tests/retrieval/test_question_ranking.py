"""A task's consolidated ranking orders its sources by relevance to the
research question, not by how well each matched the query that found it."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.plan import PlannedQuery, ResearchPlan, SearchSummary
from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.lake.consolidation import consolidate
from tasks.lake.landing import land_bundles
from tasks.retrieval.providers.base import Query
from tasks.retrieval.providers.registry import build_provider, provider_class
from tasks.retrieval.search import route, search_bundle

QUESTION = "How do I create a temporary file that is deleted automatically when it is closed?"
PAGES = {
    # the answer
    "tempfile.md": "# Temporary files\n\nNamedTemporaryFile returns a file object in the temporary directory. "
                   "The temporary file is deleted automatically as soon as it is closed, unless delete is "
                   "false. Use it to create scratch files.",
    # what a one-word query "create" finds first: it says "create" everywhere
    "projects.md": "# Create projects\n\nCreate a project, create a user, create a team. Create, create, "
                   "create: every page of this guide shows how to create something new.",
    "users.md": "# Accounts\n\nAdministrators create accounts for new users and close old ones.",
    "gardening.md": "# Gardening\n\nA compost heap turns kitchen waste into soil over a season.",
    "logging.md": "# Log files\n\nLog messages are appended to a file; rotate the file when it grows.",
}


@pytest.fixture
def library_settings(settings, tmp_path) -> Settings:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return Settings(home=settings.home, library=folder)


def ranked_names(catalog, task_id: str) -> list[str]:
    rows = catalog.con.execute("SELECT url FROM consolidated WHERE task_id = ? ORDER BY final_rank",
                               [task_id]).fetchall()
    return [Path(url).name for (url,) in rows]


def test_the_answer_ranks_first_although_a_one_word_query_ranks_another_page_first(library_settings):
    library = build_provider("library", library_settings)
    one_word = library.search(Query("q", "create", "library"), 5)
    assert Path(one_word[0].url).name == "projects.md"  # what ranking by each query's own score put first

    # a plan whose first query is that lone word, as the old keyword planner wrote them
    plan = ResearchPlan(question=QUESTION, planner="keywords", search_summary=SearchSummary(interpreted_topic="x"),
                        queries=[PlannedQuery(intent="library", text="create"),
                                 PlannedQuery(intent="library", text=QUESTION)])
    bundles = [search_bundle(library, call, task_id="t", max_results=5, settings=library_settings)
               for call in route(plan, {"library": provider_class("library")})]
    with open_catalog(library_settings, "test") as catalog:
        land_bundles(catalog, bundles, source="research")
        consolidate(catalog, "t")
        ranked = ranked_names(catalog, "t")
    assert ranked[0] == "tempfile.md"
    assert ranked.index("tempfile.md") < ranked.index("projects.md")
    # the query's own score stays beside the question's relevance, and the
    # provider's order within the query is kept
    first_query = bundles[0].results
    assert [Path(item.url).name for item in first_query][0] == "projects.md"
    projects = first_query[0]
    assert projects.score_provider > projects.score_relevance
