"""``refund_order``: the refund as an action of the generic contract, at the commerce service, on both
databases. It pays exactly the refund rule's quote once; the tenant's refund approval policy sets the least
number of reviewers; and a case is paid at most once whichever way it goes (``execute_refund`` or
``refund_order``), the one decision of :mod:`commerce_server.case_decisions` standing for both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from commerce_server.db import ActionExecutionRow, CaseDecisionRow
from commerce_server.service import CommerceService
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionProposal, ActionRequest, Agreement, RefundDestination
from contracts.commerce import OrderStatus, ProposalClosure, ProposalOutcome, RefundApproval
from contracts.errors import SupportError
from keystore import demo_identity, load_directory, write_directory
from keystore.directory_edit import set_policy
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import KnowledgeBase, default_knowledge_base
from tests.commerce_server.support_actions import ActionWorld, action_world
from tests.conftest import DemoKeys

REFUND = ActionKind.REFUND_ORDER
MakeApproval = Callable[..., RefundApproval]


@pytest.fixture
def world(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    allowed = action_world(commerce_engine, demo_keys, tmp_path)
    allowed.allow(kind=REFUND)
    return allowed


def refusal(call: Callable[[], object]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        call()
    return caught.value


def asked(order_id: str, case_id: str | None = None) -> ActionRequest:
    return ActionRequest(kind=REFUND, case_id=case_id or f"case-{order_id}", order_id=order_id)


def decision(engine: Engine, case_id: str) -> tuple[str, str | None] | None:
    with Session(engine) as session:
        row = session.get(CaseDecisionRow, case_id)
        return None if row is None else (row.outcome, row.approval_id)


def executions(engine: Engine) -> int:
    with Session(engine) as session:
        return len(session.exec(select(ActionExecutionRow)).all())


def test_an_agreed_refund_pays_the_rules_quote_once_and_decides_the_case(world: ActionWorld) -> None:
    order = world.service().get_order("QH-1001")
    quote = calculate_refund_quote(order, page_versions=policy_page_versions(default_knowledge_base()))
    proposal = world.preview("QH-1001", kind=REFUND)
    execution = world.execution(proposal)

    receipt = world.service().execute_action(execution)
    again = world.service().execute_action(execution)

    effect = proposal.effect
    assert (effect.refund_cents, effect.quote_id, effect.policy_pages) == (
        quote.amount_cents,
        quote.quote_id,
        tuple(quote.citations),
    )
    assert (effect.status_before, effect.status_after, effect.refund_to) == (
        OrderStatus.DELIVERED,
        OrderStatus.DELIVERED,
        RefundDestination.ORIGINAL_PAYMENT_METHOD,
    )
    assert proposal.requires == Agreement(customer=True, reviewers=1)
    assert (receipt.kind, receipt.refund_cents, receipt.agreed_by) == (REFUND, 12900, ("alice", "chen"))
    assert again.replay and again.receipt_id == receipt.receipt_id
    refunded = world.service().get_order("QH-1001")
    assert (refunded.refunded_cents, refunded.version, refunded.status) == (12900, 2, OrderStatus.DELIVERED)
    assert decision(world.engine, proposal.case_id) == ("paid", proposal.proposal_id)


def test_a_refund_the_policy_does_not_name_is_denied(world: ActionWorld) -> None:
    world.allow(kind=REFUND, rule=None)

    assert refusal(lambda: world.preview("QH-1001", kind=REFUND)).code == "action_not_allowed"


@pytest.mark.parametrize(
    ("order_id", "knowledge", "says"),
    [
        ("QH-1003", None, "outside the 30-day window (day 30 is the last day inside) (RETURNS:p02, RETURNS:p03)."),
        ("QH-1001", KnowledgeBase({}, []), "policy pages"),
    ],
    ids=["outside_window", "policy_pages_missing"],
)
def test_a_refund_the_rule_refuses_is_not_proposed(
    world: ActionWorld, order_id: str, knowledge: KnowledgeBase | None, says: str
) -> None:
    """The rule's own reason, in a sentence; a server whose knowledge lacks the rule's pages refunds nothing."""
    service = CommerceService(world.engine, demo_identity("alice"), keys=world.keys(), knowledge=knowledge)

    refused = refusal(lambda: service.preview_action(asked(order_id)))

    assert refused.code == "action_not_eligible"
    assert says in refused.message


def test_the_tenants_refund_approval_policy_sets_the_least_number_of_reviewers(world: ActionWorld) -> None:
    """The rule asks one reviewer; the tenant's approval policy asks two from 100.00: the proposal needs two,
    one approval executes nothing, and a policy changed after the proposal asks for a new one."""
    write_directory(world.directory_path, set_policy(load_directory(str(world.directory_path)), "qinghe", 10000))
    proposal = world.preview("QH-1001", kind=REFUND)

    one_reviewer = refusal(lambda: world.service().execute_action(world.execution(proposal)))
    write_directory(world.directory_path, set_policy(load_directory(str(world.directory_path)), "qinghe", None))
    policy_changed = refusal(lambda: world.service().execute_action(world.execution(proposal)))

    assert proposal.requires == Agreement(customer=True, reviewers=2)
    assert (one_reviewer.code, policy_changed.code) == ("approval_invalid", "action_changed")
    assert world.service().get_order("QH-1001").refunded_cents == 0
    assert executions(world.engine) == 0


def test_a_case_refunded_by_execute_refund_is_not_paid_again_as_an_action(
    world: ActionWorld, refund_approval: MakeApproval
) -> None:
    proposal = world.preview("QH-1009", kind=REFUND)
    paid = world.service().execute_refund(
        refund_approval(world.service().get_order("QH-1001"), case_id=proposal.case_id)
    )

    refused = refusal(lambda: world.service().execute_action(world.execution(proposal)))

    assert paid.amount_cents == 12900
    assert refused.code == "case_already_paid"
    assert world.service().get_order("QH-1009").refunded_cents == 4900
    assert decision(world.engine, proposal.case_id) == ("paid", paid.approval_id)
    assert executions(world.engine) == 0


def test_a_case_refunded_as_an_action_is_not_paid_again_by_execute_refund(
    world: ActionWorld, refund_approval: MakeApproval
) -> None:
    proposal = world.preview("QH-1009", kind=REFUND)
    world.service().execute_action(world.execution(proposal))
    approval = refund_approval(world.service().get_order("QH-1001"), case_id=proposal.case_id)

    refused = refusal(lambda: world.service().execute_refund(approval))

    assert refused.code == "case_already_paid"
    assert world.service().get_order("QH-1001").refunded_cents == 0
    assert decision(world.engine, proposal.case_id) == ("paid", proposal.proposal_id)


def test_a_refund_proposal_of_a_case_closed_unpaid_executes_nothing(
    world: ActionWorld, refund_approval: MakeApproval
) -> None:
    """A case whose refund proposal was rejected (closed by its workflow) pays no action of it either."""
    proposal: ActionProposal = world.preview("QH-1009", kind=REFUND)
    rejected = refund_approval(world.service().get_order("QH-1001"), case_id=proposal.case_id).proposal
    world.service().close_refund_proposal(
        ProposalClosure(proposal=rejected, digest=rejected.digest(), outcome=ProposalOutcome.REJECTED)
    )

    refused = refusal(lambda: world.service().execute_action(world.execution(proposal)))

    assert refused.code == "case_closed_unpaid"
    assert world.service().get_order("QH-1009").refunded_cents == 4900


def test_the_refund_rule_is_quoted_again_before_executing(world: ActionWorld) -> None:
    """Two cases' proposals for one order: once the first is paid, the order's balance is refunded in full
    and the second, quoted before, is refused by the rule computed again; nothing is paid twice."""
    first = world.service().preview_action(asked("QH-1009", case_id="case-refund-first"))
    second = world.service().preview_action(asked("QH-1009", case_id="case-refund-second"))
    world.service().execute_action(world.execution(first))

    refused = refusal(lambda: world.service().execute_action(world.execution(second, key="key-2")))

    assert refused.code == "action_not_eligible"
    assert world.service().get_order("QH-1009").refunded_cents == 12900
    assert decision(world.engine, second.case_id) is None


def test_a_refund_always_needs_a_reviewer_whatever_its_rule_says(world: ActionWorld) -> None:
    """A rule asking nobody still gets the one reviewer every refund needs under the tenant's policy."""
    world.allow(kind=REFUND, rule=ActionRule(customer_confirms=False, reviewers=0, max_per_customer_per_day=1))

    proposal = world.preview("QH-1001", kind=REFUND)

    assert proposal.requires == Agreement(customer=False, reviewers=1)
