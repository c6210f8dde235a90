"""A case state waiting for its reviewer, as the workflow holds it when it continues as new."""

from __future__ import annotations

from case_client import new_case
from contracts.case import Phase
from contracts.case_input import CaseState, Lifecycle
from contracts.directory import Directory
from contracts.model_io import ComposedAnswer, Intent, NextAction, Plan
from keystore import demo_identity
from tests.case_data import passage, refund_proposal, refund_quote


def waiting_state(case_id: str = "case-1") -> CaseState:
    """alice's refund of QH-1001 waiting for a reviewer: plan, evidence, quote, admitted answer, proposal."""
    state = CaseState.of(new_case(demo_identity("alice"), "Please refund QH-1001", case_id=case_id))
    state.lifecycle = Lifecycle(phase=Phase.WAITING_APPROVAL)
    state.plan = Plan(
        intent=Intent.REFUND, order_id="QH-1001", action_requested=True, queries=["refund"], milestones=[]
    )
    evidence = passage()
    state.evidence = {evidence.passage_id: evidence}
    state.quote = refund_quote()
    state.answer = ComposedAnswer(
        answer="You can have 129.00 CNY back.", citations=[evidence.passage_id], next_action=NextAction.PROPOSE_REFUND
    )
    state.answer_admitted = True
    state.proposal = refund_proposal(case_id=case_id)
    state.digest = state.proposal.digest()
    state.directory = Directory()
    return state
