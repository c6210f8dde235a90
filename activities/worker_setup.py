"""Construction of the support-case worker, shared by ``worker.py`` and in-process test workers.

``build_worker`` wires the workflow and every activity onto the ``support-cases`` task queue and
returns the worker together with a cleanup coroutine that closes what the activities hold open
(the commerce sessions and the model client). Run the worker first, then call cleanup.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.worker import Worker

from activities.boundary import ActivityBoundary
from activities.case_records import CaseRecords
from activities.commerce_http import CommerceHttpCaller
from activities.commerce_sessions import CommerceGateway, CommerceSessionPool
from activities.model_activities import ModelActivities
from activities.model_gateway import ModelGateway
from activities.model_settings import ModelSettings, load_model_settings
from activities.preferences import LanguagePreferences
from activities.settlement import SettlementActivities
from activities.tool_activities import ToolActivities
from contracts.errors import ConfigurationError
from contracts.names import TASK_QUEUE
from knowledge.store import KnowledgeBase, default_knowledge_base
from rehearsal import rehearsal_http_client
from workflows.support_case import SupportCaseWorkflow

Cleanup = Callable[[], Awaitable[None]]


def commerce_gateway(state_dir: Path, database_url: str | None = None) -> CommerceGateway:
    """The HTTP caller when ``COMMERCE_MCP_URL`` names a commerce service, else the stdio session pool."""
    return CommerceHttpCaller.from_env() or CommerceSessionPool(Path(state_dir), database_url)


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
    task_queue: str = TASK_QUEUE,
    **worker_options: Any,
) -> tuple[Worker, Cleanup]:
    """The worker for ``SupportCaseWorkflow`` and all of its activities, plus its cleanup.

    ``client`` must use ``temporalio.contrib.pydantic.pydantic_data_converter``: every payload is a
    pydantic model. The model provider comes from ``model_gateway``, else ``model_settings``, else
    the environment (rehearsal when nothing is configured); the commerce gateway from ``commerce``, else
    :func:`commerce_gateway`. ``worker_options`` go to ``Worker``.
    Raises :class:`ConfigurationError` for a client with another converter or a bad model setting.
    """
    if not issubclass(client.data_converter.payload_converter_class, PydanticPayloadConverter):
        raise ConfigurationError(
            "data_converter",
            "Connect the Temporal client with temporalio.contrib.pydantic.pydantic_data_converter.",
        )
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    gateway = model_gateway or model_gateway_for(model_settings or load_model_settings())
    pool = commerce or commerce_gateway(state_dir, database_url)
    tools = ToolActivities(pool, knowledge or default_knowledge_base(), LanguagePreferences(state_dir))
    settlement = SettlementActivities(pool)
    records = CaseRecords(state_dir)
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportCaseWorkflow],
        activities=[
            *ModelActivities(gateway).all(),
            tools.run_investigation_tool,
            settlement.execute_refund,
            records.write_case_record,
        ],
        interceptors=[ActivityBoundary()],
        **worker_options,
    )

    async def cleanup() -> None:
        try:
            await pool.aclose()
        finally:
            await gateway.aclose()

    return worker, cleanup
