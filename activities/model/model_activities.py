"""The four model requests as Temporal activities.

Each activity makes exactly one provider request (the SDK does not retry); Temporal's retry policy,
chosen by the workflow, decides whether another attempt follows, and only transient errors allow
one. The attempt number is recorded in the result's meta and (by :mod:`activities.runtime.boundary`) in a
failure's details, so the workflow can count every request against its budget. The activity's
start-to-close timeout should exceed the 40-second request timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import activity

from activities.model.model_gateway import ModelGateway
from activities.runtime.activity_metrics import counted_model_request
from contracts.model_io import (
    ComposeRequest,
    ComposeResult,
    InvestigateRequest,
    InvestigateResult,
    PlanRequest,
    PlanResult,
    ReviewRequest,
    ReviewResult,
)
from contracts.names import ActivityName


class ModelActivities:
    def __init__(self, gateway: ModelGateway) -> None:
        self.gateway = gateway

    def all(self) -> list[Callable[..., Awaitable[Any]]]:
        """The bound activity methods, for ``Worker(activities=...)``."""
        return [self.plan_case, self.investigate_turn, self.compose_answer, self.review_answer]

    @activity.defn(name=ActivityName.PLAN_CASE)
    @counted_model_request
    async def plan_case(self, request: PlanRequest) -> PlanResult:
        return await self.gateway.plan(request, attempt=activity.info().attempt)

    @activity.defn(name=ActivityName.INVESTIGATE_TURN)
    @counted_model_request
    async def investigate_turn(self, request: InvestigateRequest) -> InvestigateResult:
        return await self.gateway.investigate(request, attempt=activity.info().attempt)

    @activity.defn(name=ActivityName.COMPOSE_ANSWER)
    @counted_model_request
    async def compose_answer(self, request: ComposeRequest) -> ComposeResult:
        return await self.gateway.compose(request, attempt=activity.info().attempt)

    @activity.defn(name=ActivityName.REVIEW_ANSWER)
    @counted_model_request
    async def review_answer(self, request: ReviewRequest) -> ReviewResult:
        return await self.gateway.review(request, attempt=activity.info().attempt)
