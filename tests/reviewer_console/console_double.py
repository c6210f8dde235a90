"""Test doubles for the reviewer console's unit tests: :class:`CaseSourceDouble` stands in for the case
client (no Temporal), with the same reading rule (a reviewer reads their tenant's cases only; any other
case reads like a missing one) and a record of every review sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from case_client import CaseSummary
from contracts.case import Budgets, CaseEvent, CaseStatus, CaseView, Phase, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.errors import AuthorizationError, TransientError, WireCode
from contracts.identity import Identity
from contracts.knowledge import Language
from tests.case_data import refund_proposal

DIGEST = "ab" * 32


def waiting_view(case_id: str, *, tenant: str = "qinghe", applicant: str = "alice", minutes_left: int = 10) -> CaseView:
    """A case waiting for approval of a 12,900-cent refund of QH-1001 (no card: the double has no records)."""
    now = datetime.now(UTC)
    proposal = refund_proposal(
        case_id=case_id,
        applicant=applicant,
        tenant=tenant,
        rule_version="refund-rule/1",
        quote_id="q-1",
        created_at=now,
        expires_in=timedelta(minutes=minutes_left),
    )
    return CaseView(
        case_id=case_id,
        status=CaseStatus.WAITING_APPROVAL,
        phase=Phase.WAITING_APPROVAL,
        applicant=applicant,
        tenant=tenant,
        question="Please refund QH-1001 <script>alert(1)</script>",
        language=Language.EN,
        model="rehearsal",
        order_id="QH-1001",
        answer="We will refund <b>129.00</b>.",
        proposal=proposal,
        digest=DIGEST,
        budgets=Budgets(),
    )


class CaseHandleDouble:
    def __init__(self, source: CaseSourceDouble, case_id: str) -> None:
        self.source = source
        self.case_id = case_id.removeprefix("case-")

    async def read(self, viewer: Identity, *, start_hint: str, check_worker: bool = True) -> CaseView:
        if not self.source.serving:
            raise TransientError(WireCode("worker_unavailable"), "no worker polls the task queue (test double)")
        view = self.source.views.get(self.case_id)
        if view is None or view.tenant != viewer.tenant:
            raise AuthorizationError(WireCode("case_not_accessible"), "No such case is available to this profile.")
        return view

    async def listed(self, viewer: Identity) -> CaseSummary:
        view = self.source.views.get(self.case_id)
        if view is None or view.tenant != viewer.tenant:
            raise AuthorizationError(WireCode("case_not_accessible"), "No such case is available to this profile.")
        return self.source.summary(view)

    async def question(self) -> str:
        return self.source.views[self.case_id].question

    async def events(self) -> list[CaseEvent]:
        return []

    async def review(self, decision: SignedReview) -> ReviewOutcome:
        self.source.reviews.append((self.case_id, decision))
        return ReviewOutcome(accepted=True, status=CaseStatus.WAITING_APPROVAL, reason="approve")


class CaseSourceDouble:
    """A test double of :class:`case_client.CaseClient` holding ``views`` by case id."""

    def __init__(self, *views: CaseView) -> None:
        self.views = {view.case_id: view for view in views}
        self.reviews: list[tuple[str, SignedReview]] = []
        self.serving = True
        """Whether a worker polls: False stands for a stopped worker (every read then fails)."""

    async def list_cases(self, viewer: Identity, status: CaseStatus | None = None) -> AsyncIterator[CaseSummary]:
        for view in self.views.values():
            if view.tenant == viewer.tenant and (status is None or view.status is status):
                yield self.summary(view)

    @staticmethod
    def summary(view: CaseView) -> CaseSummary:
        started = datetime.now(UTC) - timedelta(minutes=3)
        return CaseSummary(
            view.case_id, view.status.value, view.phase.value, view.order_id, 12900, started, view.applicant
        )

    async def workers_polling(self) -> bool:
        return self.serving

    def open(self, case_id: str) -> CaseHandleDouble:
        return CaseHandleDouble(self, case_id)
