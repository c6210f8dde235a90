"""The model activities in Temporal's activity test environment (no server needed)."""

from __future__ import annotations

import dataclasses

import httpx2
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.model.model_activities import ModelActivities
from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from contracts.knowledge import Language
from contracts.model_io import PlanRequest
from rehearsal import rehearsal_http_client
from tests.activities.activity_support import run_bounded


def environment(attempt: int) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=attempt)
    return env


async def test_plan_case_records_the_attempt() -> None:
    activities = ModelActivities(ModelGateway(load_model_settings({}), http_client=rehearsal_http_client()))
    request = PlanRequest(case_id="c-1", question="Please refund QH-1001", language=Language.EN)
    result = await environment(2).run(activities.plan_case, request)
    assert result.plan.order_id == "QH-1001"
    assert (result.meta.provider, result.meta.attempt, result.meta.usage) == ("rehearsal", 2, None)


@pytest.mark.parametrize(
    ("status", "error_type", "non_retryable", "delay"),
    [(429, "transient", False, 3.0), (401, "configuration", True, None), (400, "contract", True, None)],
)
async def test_failures_become_application_errors_with_class_and_attempt(
    status: int, error_type: str, non_retryable: bool, delay: float | None
) -> None:
    reply = httpx2.Response(status, headers={"retry-after": "3"}, json={})
    transport = httpx2.MockTransport(lambda request: reply)
    settings = load_model_settings({"OPENAI_API_KEY": "k", "SUPPORT_MODEL": "m"})
    activities = ModelActivities(ModelGateway(settings, http_client=httpx2.AsyncClient(transport=transport)))
    request = PlanRequest(case_id="c-1", question="Please refund QH-1001", language=Language.EN)

    with pytest.raises(ApplicationError) as raised:
        await run_bounded(activities.plan_case, request, env=environment(4))
    error = raised.value
    assert error.type == error_type
    assert error.non_retryable is non_retryable
    assert error.details[0]["attempt"] == 4
    assert error.details[0]["error_class"] == error_type
    assert (error.next_retry_delay.total_seconds() if error.next_retry_delay else None) == delay


def test_activity_names() -> None:
    activities = ModelActivities(ModelGateway(load_model_settings({})))
    names = [getattr(method, "__temporal_activity_definition").name for method in activities.all()]
    assert names == ["plan_case", "investigate_turn", "compose_answer", "review_answer"]
