"""Past one machine: several searchlake processes, each with its own home
(as on separate machines), share one PostgreSQL catalog and one lake folder
or bucket, and ingest and consolidate into it at the same moment. Nothing is
lost or doubled, readers see stable snapshots, and a commit that conflicts
with another writer's is run again."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from tasks.common.settings import Settings
from tasks.lake.catalog import open_catalog
from tasks.lake.consolidation import _consolidate, consolidate
from tasks.lake.landing import land_files
from tests.conftest import LakeDriver, clean_env, cli_command, make_bundle, make_item

WRITERS = 3
BUNDLES_PER_WRITER = 12
ITEMS = 40


def write_share(folder: Path, writer: int) -> None:
    """One writer's bundles: its own query ids, URLs overlapping the others'."""
    folder.mkdir(parents=True)
    for n in range(BUNDLES_PER_WRITER):
        query = writer * 100 + n
        items = [make_item(f"https://site{(query + i) % 17}.example/{(query * 7 + i) % 150}", round(i / ITEMS, 3))
                 for i in range(ITEMS)]
        (folder / f"q{query}.json").write_text(json.dumps(make_bundle(f"q{query}", items)), encoding="utf-8")


def machine_env(home: Path, catalog: str, lake: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = clean_env(home)
    env.update(SEARCHLAKE_CATALOG=catalog, SEARCHLAKE_LAKE=lake, **(extra or {}))
    return env


def start(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(cli_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def started_together(tmp_path: Path, catalog: str, lake: str, extra: dict[str, str] | None = None) -> list:
    """WRITERS ingests and a consolidation loop, each its own 'machine', all started at once."""
    procs = []
    for writer in range(WRITERS):
        share = tmp_path / "inbox" / f"w{writer}"
        write_share(share, writer)
        procs.append(start(machine_env(tmp_path / f"machine{writer}", catalog, lake, extra), "ingest", str(share)))
    loop = " ; ".join(" ".join(cli_command("consolidate", "--task-id", "t1")) for _ in range(3))
    procs.append(subprocess.Popen(["sh", "-c", loop], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=machine_env(tmp_path / "consolidator", catalog, lake, extra)))
    return procs


def finish_all(procs: list) -> list[str]:
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        outs.append(out)
    return outs


def calm_reference(tmp_path: Path) -> LakeDriver:
    """The same bundles landed one after another into an embedded lake."""
    calm = LakeDriver(Settings(home=tmp_path / "calm"))
    with open_catalog(calm.settings, "calm") as catalog:
        land_files(catalog, [tmp_path / "inbox"])
        consolidate(catalog, "t1")
    return calm


def shared_settings(tmp_path: Path, catalog: str, lake: str) -> Settings:
    return Settings(home=tmp_path / "reader", catalog=catalog, lake=lake)


def sightings(driver: LakeDriver) -> dict[str, tuple[int, list[str]]]:
    """Each consolidated source with how often and in which queries it was seen.
    Which sighting represents a source depends on what a pass had read (the
    first read wins), so with writers racing it is not compared."""
    return {row["source_id"]: (row["seen_count"], sorted(row["query_ids"])) for row in driver.consolidated()}


def assert_same_as_calm(shared: LakeDriver, calm: LakeDriver) -> None:
    total = WRITERS * BUNDLES_PER_WRITER
    assert shared.count("bundles") == total
    assert shared.rows("SELECT count(DISTINCT query_id) FROM bundles") == [(total,)]
    assert shared.count("results") == total * ITEMS
    assert sightings(shared) == sightings(calm)
    ranked = shared.consolidated()
    assert [row["final_rank"] for row in ranked] == list(range(1, len(ranked) + 1))
    assert [row["score_final"] for row in ranked] == sorted((row["score_final"] for row in ranked), reverse=True)
    assert shared.rows("SELECT count(*) FROM search_read_cursor") == [(1,)]
    assert shared.cursor()["consumed_count"] == calm.cursor()["consumed_count"]


def test_writers_on_several_machines_lose_nothing_and_double_nothing(tmp_path, postgres_catalog):
    lake = str(tmp_path / "shared-lake")
    outs = finish_all(started_together(tmp_path, postgres_catalog, lake))
    for out in outs[:WRITERS]:
        assert f"landed {BUNDLES_PER_WRITER} bundles ({BUNDLES_PER_WRITER * ITEMS} items)" in out
    shared = LakeDriver(shared_settings(tmp_path, postgres_catalog, lake))
    shared.consolidate()  # reads whatever landed after the loop's last run

    assert_same_as_calm(shared, calm_reference(tmp_path))
    assert shared.orphan_table_files() == []


def test_the_same_bundles_landed_twice_at_once_land_once(tmp_path, postgres_catalog):
    lake = str(tmp_path / "shared-lake")
    share = tmp_path / "inbox" / "w0"
    write_share(share, 0)
    twins = [start(machine_env(tmp_path / f"machine{n}", postgres_catalog, lake), "ingest", str(share))
             for n in range(2)]
    finish_all(twins)
    shared = LakeDriver(shared_settings(tmp_path, postgres_catalog, lake))
    assert shared.count("bundles") == BUNDLES_PER_WRITER
    assert shared.count("results") == BUNDLES_PER_WRITER * ITEMS


def test_a_reader_inside_a_transaction_sees_one_snapshot(tmp_path, postgres_catalog, inbox):
    lake = str(tmp_path / "shared-lake")
    settings = shared_settings(tmp_path, postgres_catalog, lake)
    inbox.write(make_bundle("q1", [make_item("https://a.example/1")]))
    LakeDriver(settings).ingest(inbox.folder)
    late = tmp_path / "late"
    write_share(late, 5)

    with open_catalog(settings, "reader", read_only=True) as reader:
        reader.con.begin()
        assert reader.con.execute("SELECT count(*) FROM bundles").fetchone() == (1,)
        done = subprocess.run(cli_command("ingest", str(late)), capture_output=True, text=True, timeout=120,
                              env=machine_env(tmp_path / "writer", postgres_catalog, lake))
        assert done.returncode == 0, done.stderr
        assert reader.con.execute("SELECT count(*) FROM bundles").fetchone() == (1,)
        assert reader.con.execute("SELECT count(*) FROM results").fetchone() == (1,)
        reader.con.commit()
        assert reader.con.execute("SELECT count(*) FROM bundles").fetchone() == (1 + BUNDLES_PER_WRITER,)


def test_a_conflicting_commit_is_run_again_on_the_new_snapshot(tmp_path, postgres_catalog, inbox):
    settings = shared_settings(tmp_path, postgres_catalog, str(tmp_path / "shared-lake"))
    for n in range(3):
        inbox.write(make_bundle(f"q{n}", [make_item(f"https://a.example/{n}/{i}", 0.1 * i) for i in range(5)]))
    LakeDriver(settings).ingest(inbox.folder)
    attempts = []

    def consolidate_while_another_machine_does(cat):
        attempts.append(cat.rows("task_landing_state", ["t1"]))  # this attempt's snapshot is now fixed
        if len(attempts) == 1:
            with open_catalog(settings, "the other machine") as other:
                consolidate(other, "t1")  # commits first: this attempt's commit must conflict
        return _consolidate(cat, "t1", False)

    with open_catalog(settings, "this machine") as catalog:
        report = catalog.transaction(consolidate_while_another_machine_does, action="consolidate")

    assert len(attempts) == 2
    assert report.nothing_new  # the second attempt found the other machine's output in place
    shared = LakeDriver(settings)
    assert shared.rows("SELECT count(*) FROM search_read_cursor") == [(1,)]
    assert shared.count("consolidated") == 15


def test_writers_share_a_bucket_lake_too(tmp_path, postgres_catalog, s3_endpoint, s3_bucket, monkeypatch):
    aws = dict(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
               AWS_ENDPOINT_URL=s3_endpoint)
    lake = f"s3://{s3_bucket.name}/lake"
    finish_all(started_together(tmp_path, postgres_catalog, lake, aws))
    for name, value in aws.items():
        monkeypatch.setenv(name, value)
    shared = LakeDriver(shared_settings(tmp_path, postgres_catalog, lake))
    shared.consolidate()

    assert_same_as_calm(shared, calm_reference(tmp_path))
    keys = s3_bucket.keys()
    assert any(key.startswith("lake/tables/main/results/task_id=t1/") for key in keys)
    assert any(key.startswith("lake/raw/task_id=t1/") for key in keys)
    assert shared.orphan_table_files() == []


def test_an_unreachable_catalog_is_one_line_without_its_password(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    catalog = f"postgres:dbname=lake host=127.0.0.1 port={port} user=searchlake password=hunter2-secret"
    done = subprocess.run(cli_command("sql", "select count(*) from bundles"), capture_output=True, text=True,
                          timeout=60, env=machine_env(tmp_path / "home", catalog, str(tmp_path / "lake")))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: cannot open the catalog postgres:dbname=lake host=127.0.0.1 port={port} user=searchlake "
        "password=***: Connection refused Is the server running on that host and accepting TCP/IP connections?"]
    assert "hunter2" not in done.stdout + done.stderr
