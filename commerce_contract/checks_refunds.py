"""The checks that send refunds: quote exactness, every approval attack, the backstop the commerce server
alone stands for (the applicant token, the reviewer's tenant, the tenant's approval policy, a case
closed unpaid), the idempotent refund (the kit PAYS here, simulated), its signed receipt, and the reuse
of the paid approval token.

Every refusal is also checked to have moved nothing: the order's refunded balance and version are read
before and after. An attack that the server pays fails its check with the receipt it returned.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from activities.commerce.commerce_client import tool_error_from_result
from commerce_contract.approvals import ATTACKS, BACKSTOP_ATTACKS, Approver, Attack, proposal_of, reused
from commerce_contract.context import CheckFailed, CheckSkipped, Payment, Run
from contracts.commerce import (
    Order,
    ProposalClosed,
    ProposalClosure,
    ProposalOutcome,
    RefundApproval,
    RefundQuote,
    RefundReceipt,
)
from contracts.credentials import CredentialRefused, key_set, verify_approval_token, verify_receipt
from contracts.errors import CommerceErrorCode
from contracts.tools import ToolName
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import default_knowledge_base

Check = Callable[[Run], Awaitable[str]]


def _approver(run: Run) -> Approver:
    return Approver(run.keys, run.customer, run.fixture)


async def _balance(run: Run, order_id: str) -> tuple[int, int]:
    order = await run.read_order(order_id)
    return order.refunded_cents, order.version


async def _refused_unpaid(run: Run, approval: RefundApproval, code: str, what: str) -> str:
    """Send ``approval``; it must be refused with ``code`` and move nothing."""
    order_id = approval.proposal.order_id
    before = await _balance(run, order_id)
    result = await run.result(
        ToolName.EXECUTE_REFUND, {"approval": approval.model_dump(mode="json")}, case_id=approval.proposal.case_id
    )
    after = await _balance(run, order_id)
    if not result.is_error:
        receipt = (result.structured_content or {}).get("receipt_id", "?")
        raise CheckFailed(f"PAID {what} (receipt {receipt}); the contract refuses it with {code}")
    error = tool_error_from_result(result)
    if error.code != code:
        raise CheckFailed(f"{what} refused {error.code} ({error.message[:100]}); the contract says {code}")
    if after != before:
        raise CheckFailed(f"{what} refused, but {order_id} moved from {before} to {after} (refunded, version)")
    return f"{what} refused {code} ({error.message[:90]}), nothing moved"


async def _published_quote(run: Run, order_id: str) -> tuple[Order, RefundQuote]:
    """``order_id`` as the server reads it now, and the published rule's quote of it."""
    order = await run.read_order(order_id)
    follows = run.keys.directory.policy_tenant(order.tenant)
    quote = calculate_refund_quote(
        order, page_versions=policy_page_versions(default_knowledge_base(), tenant=follows), policy_tenant=follows
    )
    return order, quote


async def quote_exactness(run: Run) -> str:
    reasons: list[str] = []
    for order_id in run.fixture.refundable_orders:
        order, quote = await _published_quote(run, order_id)
        if quote.eligible:
            run.order, run.quote = order, quote
            break
        reasons.append(f"{order_id} {quote.reason}")
    else:
        raise CheckFailed(f"no fixture order is refundable any more (each run pays one): {', '.join(reasons)}")
    approver = _approver(run)
    for cents in (quote.amount_cents + 1, quote.amount_cents - 1):
        proposal = proposal_of(order, quote, now=datetime.now(UTC), amount_cents=cents)
        await _refused_unpaid(
            run, approver.approval(proposal), CommerceErrorCode.QUOTE_CHANGED, f"a {cents}-cent proposal"
        )
    return (
        f"{order.order_id}: the published rule quotes {quote.amount_cents} cents; "
        f"{quote.amount_cents + 1} and {quote.amount_cents - 1} were refused quote_changed"
    )


def attack_check(attack: Attack) -> Check:
    async def check(run: Run) -> str:
        order, quote = run.quoted()
        current = await run.read_order(order.order_id)
        return await _refused_unpaid(run, attack.build(_approver(run), current, quote), attack.code, "the approval")

    check.__name__ = attack.name
    return check


async def _four_eyes_quote(run: Run) -> tuple[Order, RefundQuote, int]:
    """The fixture's ``four_eyes_order`` (or the first refundable order) that the rule quotes eligible
    for an amount the tenant's policy needs two or more reviewers for, its quote and that number."""
    named = run.fixture.four_eyes_order
    seen: list[str] = []
    for order_id in [named] if named is not None else run.fixture.refundable_orders:
        order, quote = await _published_quote(run, order_id)
        needed = run.keys.directory.approvals_required(order.tenant, quote.amount_cents)
        if quote.eligible and needed > 1:
            return order, quote, needed
        seen.append(f"{order_id} {quote.amount_cents} cents" if quote.eligible else f"{order_id} {quote.reason}")
    policy = f"the approval policy of tenant {run.customer.tenant!r} in the directory"
    if named is not None:
        raise CheckFailed(f"the fixture's four_eyes_order is not a refund {policy} needs two reviewers for: {seen[0]}")
    raise CheckSkipped(
        f"{policy} lets one reviewer approve each refundable order ({', '.join(seen)}); to check it, give the "
        "tenant a policy (approval.two_reviewers_from_cents) that one of them reaches, two reviewers' keys, and "
        "optionally name it four_eyes_order"
    )


async def approval_policy_not_met(run: Run) -> str:
    """Real signatures of one reviewer fewer than the tenant's policy needs for the amount."""
    order, quote, needed = await _four_eyes_quote(run)
    approver = _approver(run)
    proposal = proposal_of(order, quote, now=datetime.now(UTC))
    approval = approver.approval(proposal, signers=approver.reviewers(order.tenant, needed - 1))
    what = f"{needed - 1} reviewer's approval of {quote.amount_cents} cents on {order.order_id} (policy: {needed})"
    return await _refused_unpaid(run, approval, CommerceErrorCode.APPROVAL_INVALID, what)


async def approval_after_case_closed(run: Run) -> str:
    """A valid approval, signed before its case's proposal was closed as rejected, sent after the close."""
    order, quote = run.quoted()
    current = await run.read_order(order.order_id)
    proposal = proposal_of(current, quote, now=datetime.now(UTC))
    approval = _approver(run).approval(proposal)
    closure = ProposalClosure(proposal=proposal, digest=proposal.digest(), outcome=ProposalOutcome.REJECTED)
    answer = await run.answer(
        ToolName.CLOSE_REFUND_PROPOSAL, {"closure": closure.model_dump(mode="json")}, case_id=proposal.case_id
    )
    closed = ProposalClosed.model_validate(answer)
    if (closed.case_id, closed.outcome) != (proposal.case_id, ProposalOutcome.REJECTED):
        raise CheckFailed(f"closing case {proposal.case_id} as rejected answered {closed.case_id} {closed.outcome}")
    what = "an approval of a proposal closed as rejected"
    return await _refused_unpaid(run, approval, CommerceErrorCode.CASE_CLOSED_UNPAID, what)


async def idempotent_refund(run: Run) -> str:
    order, quote = run.quoted()
    if await run.read_order(order.order_id) != order:
        raise CheckFailed(f"{order.order_id} changed since it was quoted (an attack was paid?)")
    approval = _approver(run).approval(proposal_of(order, quote, now=datetime.now(UTC)))
    arguments = {"approval": approval.model_dump(mode="json")}
    case = approval.proposal.case_id
    first = await run.answer(ToolName.EXECUTE_REFUND, arguments, case_id=case)
    run.payment = Payment(approval, RefundReceipt.model_validate(first))
    try:
        second = await run.answer(ToolName.EXECUTE_REFUND, arguments, case_id=case)
    except CheckFailed as refused:
        raise CheckFailed(f"the same approval sent again was not answered with its receipt: {refused}") from None
    if second != first:
        raise CheckFailed(
            f"the same approval sent twice gave two receipts: {first['receipt_id']}, {second['receipt_id']}"
        )
    after = await _balance(run, order.order_id)
    expected = (order.refunded_cents + quote.amount_cents, order.version + 1)
    if after != expected:
        raise CheckFailed(f"{order.order_id} is at {after} (refunded, version) after one refund, not {expected}")
    receipt = run.payment.receipt
    if (receipt.amount_cents, receipt.order_id, receipt.simulated) != (quote.amount_cents, order.order_id, True):
        raise CheckFailed(f"the receipt states {receipt.amount_cents} cents on {receipt.order_id}, not the quote")
    paid = f"PAID (simulated) {quote.amount_cents} cents on {order.order_id} once"
    return f"{paid}; the repeat returned receipt {receipt.receipt_id}"


async def signed_receipt(run: Run) -> str:
    payment = run.paid()
    receipt, approval = payment.receipt, payment.approval
    if receipt.signature is None:
        raise CheckFailed(f"receipt {receipt.receipt_id} carries no signature")
    try:
        claims = verify_receipt(receipt.signature, key_set(run.keys.directory))
    except CredentialRefused as refused:
        raise CheckFailed(f"receipt {receipt.receipt_id} does not verify with the published key: {refused}") from None
    assert approval.approval_token is not None
    jti = verify_approval_token(approval.approval_token, run.keys.directory).jti
    stated = (claims.receipt_id, claims.approval_id, claims.approval_jti, claims.digest, claims.amount_cents)
    expected = (receipt.receipt_id, approval.approval_id, jti, approval.digest, receipt.amount_cents)
    if stated != expected:
        raise CheckFailed(f"the signed claims {stated} do not state this refund {expected}")
    return f"receipt {receipt.receipt_id} verifies with the directory's commerce key and states this refund"


async def approval_reused(run: Run) -> str:
    payment = run.paid()
    return await _refused_unpaid(
        run,
        reused(payment.approval),
        CommerceErrorCode.APPROVAL_REUSED,
        "the paid approval token under a new approval id",
    )


def refund_checks() -> list[Check]:
    """In order: the quote picks the order, the attacks, the backstop, the payment, its receipt, its reuse."""
    return [
        quote_exactness,
        *(attack_check(attack) for attack in ATTACKS),
        *(attack_check(attack) for attack in BACKSTOP_ATTACKS),
        approval_policy_not_met,
        approval_after_case_closed,
        idempotent_refund,
        signed_receipt,
        approval_reused,
    ]
