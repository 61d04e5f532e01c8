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


def library_of(settings: Settings, folder: Path, pages: dict[str, str]) -> Settings:
    """The settings with `pages` written to `folder` as the library."""
    folder.mkdir()
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    return Settings(home=settings.home, library=folder)


@pytest.fixture
def library_settings(settings, tmp_path) -> Settings:
    return library_of(settings, tmp_path / "docs", PAGES)


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


# A Chinese question that shares its characters with a page about something
# else, and only 硬盘 with the page that answers it (and with a page about
# disks that does not).
DISK_QUESTION = "怎么提前发现硬盘快要坏了？"
DISK_PAGES = {
    "smart.md": "# 使用 SMART 预测硬盘故障\n\n用 smartctl -a /dev/sda 查看硬盘的 SMART 属性：重新分配的扇区"
                "越来越多，说明硬盘即将损坏，应该尽快备份数据并更换。",
    "fruit.md": "# 水果快要坏了怎么办\n\n怎么提前发现水果快要坏了？闻一闻，摸一摸：发软、有斑点就是快要坏了。"
                "快要坏了的香蕉可以做成蛋糕。",
    "partitions.md": "# 磁盘分区\n\n新买的硬盘要先分区：用 fdisk 或 parted 建立分区表和分区，再用 mkfs 在每个分区上"
                     "建立文件系统，最后把分区挂载到 /mnt 或写进 /etc/fstab，开机时自动挂载。",
    "badblocks.md": "# 检查坏道\n\n用 badblocks -sv /dev/sdb 扫描硬盘上的坏块，再用 e2fsck -l 把坏块记下来，"
                    "文件系统就不会再往坏块上写数据。",
    "network.md": "# 网络设置\n\n在 /etc/network/interfaces 中配置网卡的地址和网关。",
}


@pytest.fixture
def disk_library(settings, tmp_path) -> Settings:
    return library_of(settings, tmp_path / "zh", DISK_PAGES)


def test_the_question_is_ranked_by_meaning_in_chinese(disk_library, sentence_model_reads):
    library = build_provider("library", disk_library)
    by_words = library.search(Query("q", DISK_QUESTION, "library"), 5)
    assert Path(by_words[0].url).name == "fruit.md"  # the characters alone put the fruit first

    hits = library.search(Query("q", DISK_QUESTION, "library", question=DISK_QUESTION), 5)
    by_question = sorted(hits, key=lambda hit: -hit.question_score)
    assert Path(by_question[0].url).name == "smart.md"
    assert all(0 <= hit.question_score <= 1 for hit in hits)
    read, _ = sentence_model_reads
    assert any("SMART" in text for text in read)  # the model read the passages


def test_a_question_asked_again_in_a_new_process_reads_no_passage_anew(disk_library, sentence_model_reads,
                                                                       monkeypatch):
    import tasks.retrieval.providers.library.index as index

    read, forget = sentence_model_reads
    asked = Query("q", "硬盘", "library", question=DISK_QUESTION)
    first = build_provider("library", disk_library).search(asked, 5)
    assert read and disk_library.sentence_vectors_path.is_file()
    forget()  # as in a new process: no vectors, no index in memory
    monkeypatch.setattr(index, "_LOADED", {})
    read.clear()
    again = build_provider("library", disk_library).search(asked, 5)
    assert read == []
    assert [(hit.url, hit.question_score) for hit in again] == [(hit.url, hit.question_score) for hit in first]

