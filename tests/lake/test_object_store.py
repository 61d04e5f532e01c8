"""An object-store lake is configuration: SEARCHLAKE_LAKE=s3://bucket/prefix
against a local S3-compatible endpoint (moto on 127.0.0.1) lands, consolidates,
researches and answers SQL with the same commands."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")


@pytest.fixture
def s3_env(s3_endpoint, tmp_path, prefect_home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEARCHLAKE_", "AWS_"))}
    env.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
               AWS_ENDPOINT_URL=s3_endpoint, SEARCHLAKE_HOME=str(tmp_path / "home"),
               SEARCHLAKE_LAKE="s3://lake/prefix", SEARCHLAKE_AUTOSERVE="false", PREFECT_HOME=str(prefect_home),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    client.create_bucket(Bucket="lake")
    yield env, client
    for item in client.list_objects_v2(Bucket="lake").get("Contents", []):
        client.delete_object(Bucket="lake", Key=item["Key"])
    client.delete_bucket(Bucket="lake")


def searchlake(env: dict, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "flows.cli", *args], env=env, capture_output=True,
                          text=True, timeout=240)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def keys(client) -> list[str]:
    return [item["Key"] for item in client.list_objects_v2(Bucket="lake").get("Contents", [])]


def test_the_lake_lives_in_the_bucket(s3_env):
    env, client = s3_env
    assert searchlake(env, "demo").returncode == 0
    stored = keys(client)
    assert any(k.startswith("prefix/raw/task_id=sample/query_id=q10/") for k in stored)
    assert any(k.startswith("prefix/tables/main/results/task_id=sample/") for k in stored)
    answer = searchlake(env, "sql", "select count(*) from consolidated where task_id = 'sample'", "--format", "csv")
    assert answer.stdout.splitlines()[-1] == "6"


def test_a_research_run_reports_into_the_bucket(s3_env, tmp_path):
    env, client = s3_env
    library = tmp_path / "notes"
    library.mkdir()
    for n in range(6):
        (library / f"note{n}.md").write_text(f"# Tide pools {n}\n\nTide pools hold anemones and crabs; note {n}.\n")
    done = searchlake(env, "research", "What lives in tide pools?", "--library", str(library),
                      "--task-id", "tides", "--target", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    stored = keys(client)
    assert any(k.startswith("prefix/reports/task_id=tides/report_id=") and k.endswith("/report.html") for k in stored)
