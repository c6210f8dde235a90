"""The pure rooms beside the workflow: lifecycle, event cap, approval gate, turn admission, evidence,
outcomes and stop reasons. Each runs in microseconds; the end-to-end tests prove them wired in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from case_client import new_case
from contracts.case import Budgets, CaseStatus, Decision, Phase, ReviewDecision
from contracts.case_facts import CaseFacts
from contracts.case_input import MAX_EVENTS, CaseState, EventLog, Lifecycle
from contracts.commerce import RefundProposal
from contracts.credentials import SignedReview
from contracts.directory import Directory
from contracts.errors import ERROR_TYPES, ErrorClass, WireCode
from contracts.model_io import ProposedToolCall, ToolObservation
from contracts.names import EventKind, ReviewRefusal, StopCode, stop_code, stop_reason
from contracts.tools import INVESTIGATION_TOOLS, MAX_CASE_NOTES, TOOLS, WRITE_TOOLS, ToolSource
from contracts.transitions import IllegalTransition
from keystore import demo_identity
from tests.case_data import refund_proposal
from workflows.approval_gate import UNKNOWN_SIGNER, judge_review
from workflows.evidence import MAX_EVIDENCE, fold_observation
from workflows.outcomes import model_failure, settlement_failure
from workflows.turn_admission import TOO_MANY_CALLS_IN_TURN, SeenCalls, admit_turn

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ALICE = demo_identity("alice")


def test_lifecycle_status_follows_the_phase_until_the_case_ends() -> None:
    life = Lifecycle()
    assert (life.phase, life.status) == (Phase.PLAN, CaseStatus.RUNNING)
    for phase in (Phase.INVESTIGATE, Phase.REVIEW, Phase.DELIVER, Phase.WAITING_APPROVAL):
        life.enter(phase)
    assert life.status is CaseStatus.WAITING_APPROVAL
    life.enter(Phase.SETTLE)
    assert life.status is CaseStatus.RUNNING
    life.finish(CaseStatus.COMPLETED)
    assert (life.phase, life.status, life.stage) == (Phase.SETTLE, CaseStatus.COMPLETED, CaseStatus.COMPLETED)
    with pytest.raises(IllegalTransition):
        life.enter(Phase.SETTLE)


def test_lifecycle_refuses_settling_without_waiting() -> None:
    life = Lifecycle(phase=Phase.DELIVER)
    with pytest.raises(IllegalTransition):
        life.enter(Phase.SETTLE)


def test_event_log_caps_floods_but_keeps_lifecycle_events() -> None:
    log = EventLog()
    for n in range(MAX_EVENTS + 25):
        log.add(NOW, EventKind.REVIEW_REFUSED, f"attempt {n}")
    log.add(NOW, EventKind.CASE_FINISHED, "x" * 900)
    assert len(log.events) == MAX_EVENTS + 1 and log.dropped == 25
    assert log.events[-1].kind == "case_finished" and len(log.events[-1].detail) == 500


def _proposal() -> RefundProposal:
    return refund_proposal(rule_version="refund-rules-2026-09", created_at=NOW, ledger_id="L-1")


def _waiting_state(*, directory: bool) -> CaseState:
    """A case of alice waiting for a reviewer (with the directory its verification recorded, or none)."""
    state = CaseState.of(new_case(ALICE, "Please refund QH-1001", case_id="rooms1"))
    state.lifecycle = Lifecycle(phase=Phase.WAITING_APPROVAL)
    state.proposal = _proposal()
    state.digest = state.proposal.digest()
    if directory:
        state.directory = Directory()
    return state


def test_a_review_that_only_names_a_reviewer_is_refused() -> None:
    review = ReviewDecision(reviewer="chen", digest=_proposal().digest(), decision=Decision.APPROVE)
    verdict = judge_review(review, _waiting_state(directory=True), now=NOW)
    assert (verdict.decision, verdict.refusal, verdict.who) == (
        None,
        ReviewRefusal.SIGNATURE_REQUIRED,
        "chen (claimed)",
    )


def test_a_waiting_case_without_a_directory_takes_no_signed_review() -> None:
    verdict = judge_review(SignedReview(approval_token="not.a.token"), _waiting_state(directory=False), now=NOW)
    assert (verdict.decision, verdict.refusal) == (None, UNKNOWN_SIGNER)


def _call(call_id: str, order_id: str = "QH-1001") -> ProposedToolCall:
    return ProposedToolCall(call_id=call_id, name="get_order", arguments={"order_id": order_id}, raw_arguments="{}")


def test_turn_admission_charges_each_call_and_remembers_what_ran() -> None:
    seen = SeenCalls()
    first = admit_turn([_call("a"), _call("b", "QH-2001")], Budgets(), bound_order_id="QH-1001", seen=seen)
    assert [v.refusal for v in first.verdicts] == [None, "order_not_bound_to_case"]
    assert first.budgets.tool_requests == 2 and not first.tool_budget_exhausted
    again = admit_turn([_call("a"), _call("c")], first.budgets, bound_order_id="QH-1001", seen=seen)
    assert [v.refusal for v in again.verdicts] == ["duplicate_call_id", "repeated_call"]
    refused = again.verdicts[0].refused()
    assert (refused.ok, refused.error_code, refused.call_id) == (False, "duplicate_call_id", "a")


def test_turn_admission_refuses_a_crowded_turn_and_stops_at_the_budget() -> None:
    crowded = [_call(f"c{n}") for n in range(Budgets().max_calls_per_turn + 1)]
    turn = admit_turn(crowded, Budgets(), bound_order_id="QH-1001", seen=SeenCalls())
    assert {v.refusal for v in turn.verdicts} == {TOO_MANY_CALLS_IN_TURN} and turn.admitted == []
    nearly_spent = Budgets(tool_requests=Budgets().max_tool_requests - 1)
    last = admit_turn([_call("x"), _call("y")], nearly_spent, bound_order_id="QH-1001", seen=SeenCalls())
    assert last.tool_budget_exhausted and len(last.verdicts) == 1
    assert last.budgets.tool_requests == Budgets().max_tool_requests


def _passage(n: int) -> dict:
    return {
        "passage_id": f"RETURNS:p{n:02d}:en:0",
        "page_id": f"RETURNS:p{n:02d}",
        "doc_id": "RETURNS",
        "doc_version": "2026-09",
        "tenant": "qinghe",
        "language": "en",
        "page_title": "Returns",
        "text": "x",
        "score": 1.5,
    }


def test_evidence_keeps_records_caps_passages_and_drops_junk() -> None:
    facts = CaseFacts()
    evidence: dict = {}
    order = ToolObservation(call_id="1", name="get_order", ok=True, result={"order_id": "QH-1001"})
    assert (
        fold_observation("get_order", order, facts, evidence) is None and facts.wire()["order"]["order_id"] == "QH-1001"
    )
    search = ToolObservation(
        call_id="2", name="search_knowledge", ok=True, result={"passages": [_passage(n) for n in range(20)]}
    )
    fold_observation("search_knowledge", search, facts, evidence)
    folded = len(evidence)
    assert folded == MAX_EVIDENCE
    junk = ToolObservation(call_id="3", name="search_knowledge", ok=True, result={"passages": ["<b>", 7]})
    fold_observation("search_knowledge", junk, facts, evidence)
    assert len(evidence) == folded


@pytest.mark.parametrize(
    ("error_class", "status", "reason"),
    [
        (ErrorClass.CONFIGURATION, CaseStatus.FAILED, "model_configuration:provider_auth_failed: no"),
        (ErrorClass.CONTRACT, CaseStatus.NEEDS_HUMAN, "model_contract:provider_auth_failed"),
        (ErrorClass.TRANSIENT, CaseStatus.NEEDS_HUMAN, "model_unavailable:provider_auth_failed"),
    ],
)
def test_model_failure_outcomes(error_class: ErrorClass, status: CaseStatus, reason: str) -> None:
    failure = ERROR_TYPES[error_class](WireCode("provider_auth_failed"), "no", attempt=1)
    outcome = model_failure(failure)
    assert (outcome.status, stop_reason(outcome.code, outcome.detail)) == (status, reason)


def test_settlement_failure_outcomes() -> None:
    def outcome(error_class: ErrorClass) -> tuple[CaseStatus, StopCode]:
        failure = ERROR_TYPES[error_class](WireCode("quote_changed"), "x", attempt=3)
        result = settlement_failure(failure)
        return result.status, result.code

    assert outcome(ErrorClass.BUSINESS) == (CaseStatus.NEEDS_HUMAN, StopCode.SETTLEMENT_REFUSED)
    assert outcome(ErrorClass.AUTHORIZATION) == (CaseStatus.NEEDS_HUMAN, StopCode.SETTLEMENT_REFUSED)
    assert outcome(ErrorClass.TRANSIENT) == (CaseStatus.NEEDS_HUMAN, StopCode.SETTLEMENT_UNCONFIRMED)
    assert outcome(ErrorClass.CONFIGURATION) == (CaseStatus.FAILED, StopCode.SETTLEMENT_CONFIGURATION)


def test_stop_reasons_have_one_format() -> None:
    assert stop_reason(StopCode.REJECTED, "chen") == "rejected:chen"
    assert stop_reason(StopCode.ANSWERED) == "answered"
    assert stop_code("settlement_configuration:commerce_token_rejected: 401") == "settlement_configuration"


def _note(call_id: str, text: str) -> ProposedToolCall:
    return ProposedToolCall(call_id=call_id, name="save_case_note", arguments={"note": text}, raw_arguments="{}")


def test_the_models_notes_are_a_declared_write_refused_past_their_cap_for_the_case() -> None:
    """save_case_note is the model's one write: case-local, auto-allowed up to MAX_CASE_NOTES per case,
    counting the notes the case holds and the ones admitted earlier in the same turn."""
    held = MAX_CASE_NOTES - 2
    turn = admit_turn(
        [_note("n1", "a"), _note("n2", "b"), _note("n3", "c")],
        Budgets(),
        bound_order_id="QH-1001",
        seen=SeenCalls(),
        case_writes=held,
    )
    assert [v.refusal for v in turn.verdicts] == [None, None, "case_write_cap_reached"]
    full = admit_turn([_note("n4", "d")], Budgets(), bound_order_id="QH-1001", seen=SeenCalls(), case_writes=5)
    assert full.admitted == [] and full.verdicts[0].refused().error_code == "case_write_cap_reached"


def test_every_tool_offered_to_the_model_is_a_read_or_a_declared_case_write() -> None:
    """No write bypasses the gate: the model is offered reads and declared case-local writes with a cap;
    every other write (the commerce server's) is never offered and refused if asked for."""
    writes = {name for name, spec in INVESTIGATION_TOOLS.items() if not spec.read_only}
    assert writes == {"save_case_note"}
    assert all(INVESTIGATION_TOOLS[name].case_write_cap == MAX_CASE_NOTES for name in writes)
    assert all(INVESTIGATION_TOOLS[name].source is ToolSource.CASE for name in writes)
    assert {name for name, spec in TOOLS.items() if not spec.read_only} - writes == WRITE_TOOLS
    assert not WRITE_TOOLS & set(INVESTIGATION_TOOLS)
    assert {"create_ticket", "execute_refund", "execute_action", "preview_action"} <= WRITE_TOOLS
    for name in sorted(WRITE_TOOLS):
        call = ProposedToolCall(call_id=f"w-{name}", name=name, arguments={}, raw_arguments="{}")
        turn = admit_turn([call], Budgets(), bound_order_id="QH-1001", seen=SeenCalls())
        assert turn.verdicts[0].refusal == "write_tool_not_allowed", name
