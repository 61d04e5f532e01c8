"""A watch's schedule: a Prefect deployment of flows/watch.py:watch_round
named watch-<name>, with an interval schedule, on the work pool `searchlake`
like the deployments of prefect.yaml (a worker started in the project
folder runs its rounds: `prefect worker start --pool searchlake`). It is
made through the Prefect API the command reaches (PREFECT_API_URL, or
Prefect's local server), so Prefect's UI and API show it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from flows.prefect_api import reach_api
from schemas.watch import Watch, interval_words
from tasks.reporting.markdown import md_text

PROJECT = Path(__file__).resolve().parents[1]
WORK_POOL = "searchlake"
FLOW_NAME = "searchlake-watch-round"
ENTRYPOINT = "flows/watch.py:watch_round"


def deploy_watch(watch: Watch) -> str:
    """Create (or update) the watch's deployment and schedule; its id."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentScheduleCreate
    from prefect.client.schemas.schedules import IntervalSchedule
    from prefect.utilities.callables import parameter_schema

    from flows.watch import watch_round
    schedule = DeploymentScheduleCreate(schedule=IntervalSchedule(interval=timedelta(seconds=watch.interval_seconds)),
                                        active=True)
    reach_api()  # PrefectUnavailable, said in one line, when there is no Prefect to schedule with
    with get_client(sync_client=True) as client:
        _ensure_work_pool(client)
        flow_id = client.create_flow_from_name(FLOW_NAME)
        deployment_id = client.create_deployment(
            flow_id=flow_id, name=watch.deployment_name, work_pool_name=WORK_POOL, entrypoint=ENTRYPOINT,
            # as prefect.yaml's pull step: the worker runs the round from the project folder
            pull_steps=[{"prefect.deployments.steps.set_working_directory": {"directory": str(PROJECT)}}],
            parameters={"name": watch.name}, parameter_openapi_schema=parameter_schema(watch_round).model_dump(),
            schedules=[schedule], tags=["searchlake", "watch"],
            concurrency_limit=1,  # a round still running when the next is due: the next waits
            description=deployment_description(watch))
    return str(deployment_id)


def deployment_description(watch: Watch) -> str:
    """What Prefect's UI shows of the deployment, rendered as Markdown: the
    question as text, never an image, a link or HTML (a question is anyone's
    text; an image in it would be fetched by every browser showing it)."""
    return f"Watch {watch.name}, every {interval_words(watch.interval_seconds)}: {md_text(watch.question)}"


def _ensure_work_pool(client) -> None:
    """The pool prefect.yaml's deployments use, made as `prefect work-pool
    create searchlake --type process` makes it when this Prefect has none."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
    from prefect.workers.process import ProcessWorker
    try:
        client.read_work_pool(WORK_POOL)
    except ObjectNotFound:
        try:
            client.create_work_pool(WorkPoolCreate(name=WORK_POOL, type="process",
                                                   base_job_template=ProcessWorker.get_default_base_job_template()))
        except ObjectAlreadyExists:  # made meanwhile
            pass


def undeploy_watch(name: str) -> bool:
    """Delete the watch's deployment (its schedule and scheduled runs go with
    it); False when Prefect has none."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    reach_api()
    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(f"{FLOW_NAME}/watch-{name}")
        except ObjectNotFound:
            return False
        client.delete_deployment(deployment.id)
    return True
