"""The support-case worker's parts, built and wired: one ``Worker`` for the workflow and its activities.

This module knows every part the worker runs: the workflow, the activities, the model gateway (the
rehearsal model is injected here when no provider is configured), the commerce gateway (stdio
sessions, or HTTP when ``COMMERCE_MCP_URL`` is set) and the knowledge base. :func:`support_worker`
builds and runs a worker as an async context manager (as the Temporal samples do with
``async with Worker(...)``); ``worker.py`` (the process: checks, signals, exit codes), the dev stack and
the tests use it. It sits below both, so that the dev stack does not reach up into the command line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.worker import Worker

from activities.case.case_records import CaseRecords
from activities.case.credential_activities import CredentialActivities
from activities.case.preferences import LanguagePreferences
from activities.case.run_origin import confirm_continued_run
from activities.commerce.actions import ActionActivities
from activities.commerce.commerce_http import CommerceHttpCaller
from activities.commerce.commerce_sessions import CommerceGateway, CommerceSessionPool, TracedCommerce
from activities.commerce.settlement import SettlementActivities
from activities.commerce.tool_activities import ToolActivities
from activities.model.model_activities import ModelActivities
from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import ModelSettings, load_model_settings
from activities.runtime.boundary import ActivityBoundary
from case_client.deployment import deployment_config, make_current
from case_tracing import tracer_of
from contracts.errors import ConfigurationError, SettingCode
from contracts.names import TASK_QUEUE
from contracts.payload_codec import uses_case_codec
from keystore import directory_location
from keystore.directory_file import DirectorySource
from keystore.outside_issuer import OutsideIssuer
from knowledge.store import KnowledgeBase, default_knowledge_base
from rehearsal import rehearsal_http_client
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

Cleanup = Callable[[], Awaitable[None]]


def commerce_gateway(
    state_dir: Path, database_url: str | None = None, directory: DirectorySource | None = None
) -> CommerceGateway:
    """The HTTP caller when ``COMMERCE_MCP_URL`` names a commerce service, else the stdio session pool;
    either checks every applicant against ``directory`` (default: ``SUPPORT_DIRECTORY`` or the state dir's)."""
    source = directory or DirectorySource(directory_location(Path(state_dir)))
    return CommerceHttpCaller.from_env(source) or CommerceSessionPool(Path(state_dir), database_url, directory=source)


def model_gateway_for(settings: ModelSettings) -> ModelGateway:
    """The gateway for ``settings``; the rehearsal model gets the in-process client that answers it."""
    return ModelGateway(settings, rehearsal_http_client() if settings.is_rehearsal else None)


def build_worker(
    client: Client,
    state_dir: Path,
    *,
    database_url: str | None = None,
    model_settings: ModelSettings | None = None,
    model_gateway: ModelGateway | None = None,
    knowledge: KnowledgeBase | None = None,
    commerce: CommerceGateway | None = None,
    directory: str | None = None,
    task_queue: str = TASK_QUEUE,
    deployment: WorkerDeploymentVersion | None = None,
    **worker_options: Any,
) -> tuple[Worker, Cleanup]:
    """The worker for ``SupportCaseWorkflow`` and all of its activities, plus its cleanup.

    ``client`` must use :data:`contracts.payload_codec.CASE_DATA_CONVERTER` (what
    :func:`case_client.connect` gives): every payload is a pydantic model, and large ones travel
    compressed, so a worker without the case codec could not read what the others write. The model
    provider comes from ``model_gateway``, else ``model_settings``, else
    the environment (rehearsal when nothing is configured); the commerce gateway from ``commerce``, else
    :func:`commerce_gateway`; the support directory that verifies credentials from ``directory`` (a file
    path or https URL), else ``SUPPORT_DIRECTORY``, else the state dir's; an outside issuer of applicant
    tokens where ``SUPPORT_APPLICANT_JWKS_URL`` names one. With ``deployment`` the
    worker runs as that version of the Worker Deployment and its cases are pinned to it
    (:mod:`case_client.deployment`); without it the worker is unversioned (the fast tests' own task
    queues). ``worker_options`` go to ``Worker``. Tracing comes with the client: when it carries
    Temporal's ``TracingInterceptor`` (see :func:`case_client.connect`), Temporal runs it in this
    worker too and every commerce call gets a span.
    Raises :class:`ConfigurationError` for a client with another converter or a bad model setting.
    """
    converter = client.data_converter
    if not (issubclass(converter.payload_converter_class, PydanticPayloadConverter) and uses_case_codec(converter)):
        raise ConfigurationError(
            SettingCode.DATA_CONVERTER,
            "Connect the Temporal client with contracts.payload_codec.CASE_DATA_CONVERTER (case_client.connect "
            "does): pydantic JSON, payloads from 4 KiB up compressed; another worker's payloads need its codec.",
        )
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    gateway = model_gateway or model_gateway_for(model_settings or load_model_settings())
    source = DirectorySource(directory or directory_location(state_dir))
    pool = commerce or commerce_gateway(state_dir, database_url, source)
    tracer = tracer_of(client)
    if tracer is not None:
        pool = TracedCommerce(pool, tracer)
    tools = ToolActivities(pool, knowledge or default_knowledge_base(), LanguagePreferences(state_dir), source)
    settlement = SettlementActivities(pool)
    actions = ActionActivities(pool)
    records = CaseRecords(state_dir)
    credentials = CredentialActivities(source, OutsideIssuer.from_environment())
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportCaseWorkflow],
        activities=[
            credentials.verify_applicant,
            credentials.verify_customer_message,
            credentials.read_case_directory,
            confirm_continued_run,
            *ModelActivities(gateway).all(),
            tools.run_investigation_tool,
            settlement.execute_refund,
            settlement.close_refund_proposal,
            actions.preview_action,
            actions.execute_action,
            actions.close_action_proposal,
            records.write_case_record,
        ],
        interceptors=[ActivityBoundary()],
        workflow_runner=workflow_runner(),
        deployment_config=deployment_config(deployment) if deployment is not None else None,
        **worker_options,
    )

    async def cleanup() -> None:
        try:
            await pool.aclose()
        finally:
            await gateway.aclose()

    return worker, cleanup


@asynccontextmanager
async def support_worker(
    client: Client, state_dir: Path, *, set_current: bool = False, **options: Any
) -> AsyncIterator[Worker]:
    """Build the worker with :func:`build_worker` (same ``options``), run it, and clean up after it stops.

    With ``set_current`` (and a ``deployment``), its version is made the deployment's current version
    once it polls, before this yields: the throwaway stacks' way to register and route to their build.
    """
    worker, cleanup = build_worker(client, state_dir, **options)
    try:
        async with worker:
            deployment = options.get("deployment")
            if set_current and deployment is not None:
                await make_current(client, deployment)
            yield worker
    finally:
        await cleanup()
