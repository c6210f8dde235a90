"""The requests the workflow really makes: recorded from cases run with the rehearsal model.

Two alice cases (a QH-1001 refund and a QH-1005 delivery question) run through a throwaway Temporal dev
server with the rehearsal model, while every PlanRequest, InvestigateRequest, ComposeRequest and
ReviewRequest the worker hands to :class:`activities.model.model_gateway.ModelGateway` is copied into a
:class:`Captured`; the wire checks send these again to the real server.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from activities.model.model_gateway import ModelGateway
from contracts.knowledge import Language
from contracts.model_io import ComposeRequest, InvestigateRequest, PlanRequest, ReviewRequest


@dataclass
class Captured:
    plan: list[PlanRequest] = field(default_factory=list)
    investigate: list[InvestigateRequest] = field(default_factory=list)
    compose: list[ComposeRequest] = field(default_factory=list)
    review: list[ReviewRequest] = field(default_factory=list)


@contextlib.contextmanager
def recording(captured: Captured) -> Iterator[None]:
    originals = {kind: getattr(ModelGateway, kind) for kind in ("plan", "investigate", "compose", "review")}

    def wrap(kind: str) -> Any:
        original = originals[kind]

        async def recorded(self: ModelGateway, request: Any, **kwargs: Any) -> Any:
            getattr(captured, kind).append(request.model_copy(deep=True))
            return await original(self, request, **kwargs)

        return recorded

    for kind in originals:
        setattr(ModelGateway, kind, wrap(kind))
    try:
        yield
    finally:
        for kind, original in originals.items():
            setattr(ModelGateway, kind, original)


async def capture_requests(root: Path) -> Captured:
    from devstack.rehearsal_stack import rehearsal_stack

    captured = Captured()
    questions = [
        "Please refund QH-1001 and explain the amount and the policy",
        "Where is my order QH-1005? Can I still change the delivery address?",
    ]
    with recording(captured):
        async with rehearsal_stack(root) as stack:
            from keystore import demo_identity

            for question in questions:
                handle = await stack.cases.start(
                    demo_identity("alice"),
                    question,
                    language=Language.EN,
                    ttl_seconds=60,
                    case_id=f"compat-capture-{uuid.uuid4().hex[:8]}",
                )
                await handle.settled(timeout=120, poll_seconds=0.3)
    return captured
