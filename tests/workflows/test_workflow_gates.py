"""Pure workflow logic: the transition table, the investigation gate and the deliver gate."""

from __future__ import annotations

import pytest

from contracts.case import TERMINAL_STATUSES, CaseStatus, Phase
from contracts.commerce import RefundQuote, order_ids_in
from contracts.model_io import ComposedAnswer, Intent, NextAction, Plan, ProposedToolCall
from contracts.transitions import TRANSITIONS, IllegalTransition, Stage, check_transition
from tests.case_data import ineligible_quote, refund_quote
from workflows.deliver_gate import decide_delivery
from workflows.tool_gate import call_fingerprint, refuse_call


def test_happy_path_is_allowed_in_order() -> None:
    stage: Stage = Phase.PLAN
    for target in (
        Phase.INVESTIGATE,
        Phase.REVIEW,
        Phase.DELIVER,
        Phase.WAITING_APPROVAL,
        Phase.SETTLE,
        CaseStatus.COMPLETED,
    ):
        stage = check_transition(stage, target)
    assert stage is CaseStatus.COMPLETED


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (Phase.PLAN, Phase.SETTLE),
        (Phase.INVESTIGATE, Phase.WAITING_APPROVAL),
        (Phase.DELIVER, Phase.SETTLE),
        (Phase.WAITING_APPROVAL, CaseStatus.COMPLETED),
        (CaseStatus.COMPLETED, Phase.SETTLE),
        (CaseStatus.REJECTED, Phase.SETTLE),
        (CaseStatus.EXPIRED, Phase.SETTLE),
    ],
)
def test_illegal_transitions_raise(current, target) -> None:
    with pytest.raises(IllegalTransition):
        check_transition(current, target)


def test_terminal_statuses_have_no_way_out_and_only_settle_completes_a_refund() -> None:
    assert all(TRANSITIONS[status] == frozenset() for status in TERMINAL_STATUSES)
    into_settle = [stage for stage, targets in TRANSITIONS.items() if Phase.SETTLE in targets]
    assert into_settle == [Phase.WAITING_APPROVAL]


def _call(name: str, call_id: str = "c1", **arguments) -> ProposedToolCall:
    return ProposedToolCall(call_id=call_id, name=name, arguments=arguments, raw_arguments="{}")


def _refuse(call: ProposedToolCall, seen_ids=(), seen_fps=()) -> str | None:
    return refuse_call(call, bound_order_id="QH-1001", seen_call_ids=set(seen_ids), seen_fingerprints=set(seen_fps))


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (_call("get_order", order_id="QH-1001"), None),
        (_call("execute_refund", approval="x"), "write_tool_not_allowed"),
        (_call("create_ticket", order_id="QH-1001", text="t", idempotency_key="k"), "write_tool_not_allowed"),
        (_call("drop_tables"), "unknown_tool"),
        (_call("get_order", order_id="QH-1001", tenant="south"), "unexpected_fields"),
        (_call("get_order", order_id="QH-1001", user="bob"), "unexpected_fields"),
        (_call("get_order"), "missing_fields"),
        (_call("get_order", order_id="QH-2001"), "order_not_bound_to_case"),
        (_call("calculate_refund", order_id="QH-3001"), "order_not_bound_to_case"),
        (_call("get_order", order_id=1001), "invalid_argument_type"),
        (_call("search_knowledge", query="x" * 1501), "argument_too_long"),
        (_call("read_knowledge", passage_id="../../etc/passwd"), "invalid_argument"),
        (
            ProposedToolCall(call_id="c1", name="get_order", arguments=None, raw_arguments="{oops"),
            "malformed_arguments",
        ),
    ],
)
def test_the_gate_refuses_what_the_model_may_not_do(call: ProposedToolCall, code: str | None) -> None:
    assert _refuse(call) == code


def test_duplicate_call_ids_and_repeated_actions_are_refused() -> None:
    call = _call("get_order", order_id="QH-1001")
    assert _refuse(call, seen_ids={"c1"}) == "duplicate_call_id"
    assert _refuse(_call("get_order", "c2", order_id="QH-1001"), seen_fps={call_fingerprint(call)}) == ("repeated_call")


def test_order_ids_are_read_literally_from_the_question() -> None:
    assert order_ids_in("refund QH-1001 and QH-1002, QH-1001 again") == ["QH-1001", "QH-1002"]
    assert order_ids_in("I paid 9,999, refund 9999") == []


def _plan(intent=Intent.REFUND, action=True, order="QH-1001") -> Plan:
    return Plan(intent=intent, order_id=order, action_requested=action, queries=[], milestones=[])


def _quote(eligible: bool = True) -> RefundQuote:
    return refund_quote() if eligible else ineligible_quote()


EVIDENCE = {"RETURNS:p02:en:0", "RETURNS:p03:en:1", "DELIVERY:p02:en:0"}


def _answer(
    next_action=NextAction.PROPOSE_REFUND,
    citations=("RETURNS:p02:en:0", "RETURNS:p03:en:1"),
    text="CNY 129.00 can be refunded after a reviewer approves; nothing has been paid yet.",
):
    return ComposedAnswer(answer=text, citations=list(citations), next_action=next_action)


def test_a_complete_refund_proposal_passes_the_gate() -> None:
    decision = decide_delivery(_plan(), _answer(), _quote(), EVIDENCE)
    assert (decision.outcome, decision.reason) == (None, "proposal_admitted")


@pytest.mark.parametrize(
    ("plan", "answer", "quote", "reason"),
    [
        (_plan(action=False), _answer(), _quote(), "proposal_without_refund_request"),
        (_plan(intent=Intent.DELIVERY), _answer(), _quote(), "proposal_without_refund_request"),
        (_plan(), _answer(), None, "proposal_without_quote"),
        (_plan(), _answer(), _quote(eligible=False), "quote_not_eligible:outside_window"),
        (_plan(), _answer(citations=["RETURNS:p02:en:0"]), _quote(), "missing_policy_citations:RETURNS:p03"),
        (_plan(), _answer(citations=["RETURNS:p09:en:0"]), _quote(), "citation_not_in_context"),
        (
            _plan(),
            _answer(citations=["RETURNS:p02:en:0", "RETURNS:p02:en:0"]),
            _quote(),
            "duplicate_citations",
        ),
        (
            _plan(),
            _answer(text="Your refund has been paid."),
            _quote(),
            "answer_claims_payment_without_receipt",
        ),
        (_plan(intent=Intent.POLICY), _answer(NextAction.ANSWER, citations=[]), None, "uncited_answer"),
    ],
)
def test_the_deliver_gate_refuses_incomplete_or_unsupported_outcomes(plan, answer, quote, reason) -> None:
    decision = decide_delivery(plan, answer, quote, EVIDENCE)
    assert decision.outcome is CaseStatus.NEEDS_HUMAN
    assert decision.reason == reason


def test_needs_input_and_handoff_map_to_their_statuses() -> None:
    assert decide_delivery(_plan(), _answer(NextAction.NEEDS_INPUT, []), None, EVIDENCE).outcome is (
        CaseStatus.NEEDS_INPUT
    )
    assert decide_delivery(_plan(), _answer(NextAction.HANDOFF, []), None, EVIDENCE).outcome is (CaseStatus.NEEDS_HUMAN)
    answered = decide_delivery(
        _plan(intent=Intent.DELIVERY), _answer(NextAction.ANSWER, ["DELIVERY:p02:en:0"]), None, EVIDENCE
    )
    assert answered.outcome is CaseStatus.COMPLETED


def test_an_order_id_must_stand_on_its_own_in_the_question() -> None:
    assert order_ids_in("refund QH-10012") == []
    assert order_ids_in("refund XQH-1001 or QH-1001-B") == []
    assert order_ids_in("refund (QH-1001).") == ["QH-1001"]
    for glued in ("QH-10011", "ABCQH-1001", "QH-1001-EXTRA", "refund_QH-1001", "QH-１００１"):
        assert order_ids_in(f"请退款{glued}并给出依据") == [], glued


def test_an_order_id_written_against_chinese_text_is_found() -> None:
    assert order_ids_in("请退款QH-1001并给出依据") == ["QH-1001"]
    assert order_ids_in("订单QH-1001和QH-1002都要退") == ["QH-1001", "QH-1002"]
    assert order_ids_in("（QH-1005）到哪了？") == ["QH-1005"]


def test_a_status_that_equals_a_phase_by_value_is_not_a_legal_step() -> None:
    assert Phase.WAITING_APPROVAL == CaseStatus.WAITING_APPROVAL
    with pytest.raises(IllegalTransition):
        check_transition(Phase.DELIVER, CaseStatus.WAITING_APPROVAL)
    assert check_transition(Phase.DELIVER, Phase.WAITING_APPROVAL) is Phase.WAITING_APPROVAL
