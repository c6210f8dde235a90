"""execute_refund: idempotent by approval id, re-checked, and paid at most once, on both databases.

The signed-approval checks and their attacks are in test_commerce_approval_tokens.py."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from threading import Barrier

import pytest
from sqlalchemy import Engine, func, select

from commerce_server.db import RefundRow
from commerce_server.service import CommerceService
from contracts.commerce import RefundApproval
from contracts.errors import AuthorizationError, BusinessError, SupportError
from keystore import demo_identity
from knowledge.store import KnowledgeBase

MakeApproval = Callable[..., RefundApproval]


@pytest.fixture
def alice(commerce_engine: Engine) -> CommerceService:
    return CommerceService(commerce_engine, demo_identity("alice"))


def refunds_recorded(engine: Engine) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(RefundRow)).scalar_one()


def refusal(call: Callable[[], object]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        call()
    return caught.value


def test_refund_pays_the_quoted_amount_once(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    approval = refund_approval(alice.get_order("QH-1001"))

    receipt = alice.execute_refund(approval)
    repeat = alice.execute_refund(approval)

    assert repeat == receipt
    assert receipt.receipt_id.startswith("SIM-") and len(receipt.receipt_id) == 20
    assert (receipt.amount_cents, receipt.order_version_after, receipt.simulated) == (12900, 2, True)
    order = alice.get_order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)
    assert refunds_recorded(commerce_engine) == 1


def test_partially_refunded_order_pays_the_balance(alice: CommerceService, refund_approval: MakeApproval) -> None:
    receipt = alice.execute_refund(refund_approval(alice.get_order("QH-1009")))

    assert receipt.amount_cents == 8000
    order = alice.get_order("QH-1009")
    assert (order.refunded_cents, order.version) == (12900, 2)


def test_same_approval_id_with_another_digest_is_a_conflict(
    alice: CommerceService, refund_approval: MakeApproval
) -> None:
    alice.execute_refund(refund_approval(alice.get_order("QH-1001"), approval_id="approval-shared"))
    other = refund_approval(alice.get_order("QH-1002"), approval_id="approval-shared")

    error = refusal(lambda: alice.execute_refund(other))

    assert isinstance(error, BusinessError)
    assert error.code == "idempotency_conflict"
    assert alice.get_order("QH-1002").refunded_cents == 0


def test_changed_order_version_is_quote_changed(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    stale = refund_approval(alice.get_order("QH-1009"))
    alice.execute_refund(refund_approval(alice.get_order("QH-1009")))

    assert refusal(lambda: alice.execute_refund(stale)).code == "quote_changed"
    assert alice.get_order("QH-1009").refunded_cents == 12900
    assert refunds_recorded(commerce_engine) == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"amount_cents": 14100},
        {"order_version": 7},
        {"rule_version": "returns-2026-07"},
        {"quote_id": "Q-0000000000000000"},
    ],
)
def test_proposal_that_differs_from_a_fresh_quote_is_refused(
    alice: CommerceService, refund_approval: MakeApproval, changes: dict
) -> None:
    approval = refund_approval(alice.get_order("QH-1001"), **changes)

    assert refusal(lambda: alice.execute_refund(approval)).code == "quote_changed"
    assert alice.get_order("QH-1001").refunded_cents == 0


def test_the_re_quote_checks_the_policy_pages_of_the_services_knowledge_base(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    approval = refund_approval(alice.get_order("QH-1001"))
    without_policy = CommerceService(commerce_engine, demo_identity("alice"), knowledge=KnowledgeBase({}, []))

    assert refusal(lambda: without_policy.execute_refund(approval)).code == "quote_changed"
    assert refunds_recorded(commerce_engine) == 0
    assert alice.execute_refund(approval).amount_cents == 12900


def test_ineligible_order_is_never_paid(alice: CommerceService, refund_approval: MakeApproval) -> None:
    approval = refund_approval(alice.get_order("QH-1003"), amount_cents=17900)

    assert refusal(lambda: alice.execute_refund(approval)).code == "quote_changed"


@pytest.mark.parametrize(
    ("reviewer", "code"),
    [
        ("alice", "approval_signature_required"),
        ("bob", "approval_signature_required"),
        ("nobody", "approval_signature_required"),
        ("mei", "approval_invalid"),
    ],
)
def test_reviewer_must_be_another_reviewer_of_the_tenant(
    alice: CommerceService, refund_approval: MakeApproval, reviewer: str, code: str
) -> None:
    """A name without a reviewer's key signs nothing; mei's own signature is another tenant's."""
    approval = refund_approval(alice.get_order("QH-1001"), reviewer=reviewer)

    error = refusal(lambda: alice.execute_refund(approval))

    assert isinstance(error, AuthorizationError)
    assert error.code == code


def test_digest_must_match_the_proposal(alice: CommerceService, refund_approval: MakeApproval) -> None:
    approval = refund_approval(alice.get_order("QH-1001"))
    forged = approval.model_copy(update={"digest": "0" * 64})

    assert refusal(lambda: alice.execute_refund(forged)).code == "approval_invalid"


def test_another_customers_approval_is_refused(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    approval = refund_approval(alice.get_order("QH-1001"))
    bob = CommerceService(commerce_engine, demo_identity("bob"))

    assert refusal(lambda: bob.execute_refund(approval)).code == "approval_invalid"
    alice.execute_refund(approval)
    assert refusal(lambda: bob.execute_refund(approval)).code == "approval_invalid"


def test_approval_signed_after_the_proposal_expired_is_refused(
    alice: CommerceService, refund_approval: MakeApproval
) -> None:
    approval = refund_approval(alice.get_order("QH-1001"), expires_in=timedelta(seconds=-1))

    error = refusal(lambda: alice.execute_refund(approval))

    assert isinstance(error, BusinessError)
    assert error.code == "approval_expired" and "proposal_expired" in error.message


def test_concurrent_executions_pay_once(commerce_engine: Engine, refund_approval: MakeApproval) -> None:
    approval = refund_approval(CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1001"))
    start = Barrier(8)

    def execute(_: int):
        service = CommerceService(commerce_engine, demo_identity("alice"))
        start.wait()
        return service.execute_refund(approval)

    with ThreadPoolExecutor(max_workers=8) as pool:
        receipts = list(pool.map(execute, range(8)))

    assert len(set(receipts)) == 1
    assert refunds_recorded(commerce_engine) == 1
    order = CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1001")
    assert (order.refunded_cents, order.version) == (12900, 2)


def test_competing_approvals_for_one_order_pay_once(commerce_engine: Engine, refund_approval: MakeApproval) -> None:
    order = CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1002")
    approvals = [refund_approval(order) for _ in range(6)]
    start = Barrier(len(approvals))

    def execute(approval: RefundApproval) -> str:
        service = CommerceService(commerce_engine, demo_identity("alice"))
        start.wait()
        try:
            return service.execute_refund(approval).receipt_id
        except SupportError as error:
            return error.code

    with ThreadPoolExecutor(max_workers=len(approvals)) as pool:
        outcomes = list(pool.map(execute, approvals))

    assert sorted(outcome.startswith("SIM-") for outcome in outcomes) == [False] * 5 + [True]
    assert {outcome for outcome in outcomes if not outcome.startswith("SIM-")} == {"quote_changed"}
    assert refunds_recorded(commerce_engine) == 1
    assert CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1002").refunded_cents == 17900


def test_a_proposal_quoted_on_another_ledger_or_none_is_refused(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval, tmp_path
) -> None:
    order = alice.get_order("QH-1001")
    assert order.ledger_id and order.ledger_id.startswith("L-")
    other_ledger = refund_approval(order, ledger_id="L-0000000000000000")
    unbound = refund_approval(order, ledger_id=None)
    for approval in (other_ledger, unbound):
        refused = refusal(partial(alice.execute_refund, approval))
        assert isinstance(refused, BusinessError) and refused.code == "ledger_mismatch"
    assert refunds_recorded(commerce_engine) == 0
    # the same database keeps its ledger id through a re-seed (init never changes it)
    from commerce_server.seed import seed_fixture

    seed_fixture(commerce_engine)
    assert CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1001").ledger_id == order.ledger_id
    assert alice.execute_refund(refund_approval(order)).amount_cents == 12900


def test_a_proposal_without_a_ledger_keeps_the_digest_it_was_approved_with(
    refund_approval: MakeApproval, alice
) -> None:
    """Cases waiting before ledgers were bound (or, before release 0.7, case starts recorded) replay with
    the digest their reviewer saw."""
    unbound = refund_approval(alice.get_order("QH-1001"), ledger_id=None).proposal
    assert unbound.case_started_at is None
    without_field = {
        k: v for k, v in unbound.model_dump(mode="json").items() if k not in ("ledger_id", "case_started_at")
    }
    from contracts.commerce import canonical_digest

    assert unbound.digest() == canonical_digest(without_field)
    bound = unbound.model_copy(update={"ledger_id": "L-0123456789abcdef"})
    assert bound.digest() != unbound.digest()
    started = bound.model_copy(update={"case_started_at": bound.created_at})
    assert started.digest() != bound.digest()
