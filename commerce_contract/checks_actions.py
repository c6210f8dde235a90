"""The checks of the action contract (``preview_action``, ``execute_action``): default deny, the exact
effect, identity scoping, everyone's agreement, expiry, and idempotency as ACP §6 states it. The kit
EXECUTES here: it cancels the first order of the fixture's ``cancellable_orders`` that is still
processing (simulated), once per run; an address change it previews, never executes.

What the server's directory says decides what is checked: default deny with every action kind the
customer's tenant does not allow, and the checks of each kind it allows (the others are ``SKIP``; the
kit never edits the server's directory). Every refusal is also checked to
have changed nothing: the order's status and version are read before and after.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from activities.commerce.commerce_client import tool_error_from_result
from commerce_contract.checks_refunds import Check
from commerce_contract.context import CheckFailed, CheckSkipped, Run, fresh_case_id, text_of
from contracts.action_credentials import verify_action_receipt
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionExecution, ActionProposal, ActionReceipt, ActionRequest, Address
from contracts.case import Decision
from contracts.commerce import Order, OrderStatus
from contracts.credentials import CredentialRefused, key_set
from contracts.errors import CommerceErrorCode
from contracts.tools import ToolName
from knowledge.action_rules import OrderRecords, action_effect

KIND = ActionKind.CANCEL_ORDER
EXPIRING_SECONDS = 1
KIT_ADDRESS = Address(
    recipient="Conformance Kit (fictional)",
    phone="+86 10 5555 0199",
    line1="1 Test Street",
    city="Testville",
    postcode="100000",
    country="CN",
)
APPROVE = Decision.APPROVE.value


def required_rule(run: Run, kind: ActionKind = KIND) -> ActionRule:
    rule = run.keys.directory.action_rule(run.customer.tenant, kind)
    if rule is None:
        raise CheckSkipped(
            f"tenant {run.customer.tenant!r} allows no {kind.value} (default deny is checked with it; "
            f"starter.py directory allow-action {run.customer.tenant} {kind.value} allows it)"
        )
    return rule


async def cancellable(run: Run) -> Order:
    """The first fixture order still processing (the one this run cancels)."""
    if run.action_order is not None:
        return run.action_order
    for order_id in run.fixture.cancellable_orders:
        order = await run.read_order(order_id)
        if order.status is OrderStatus.PROCESSING:
            run.action_order = order
            return order
    raise CheckSkipped(
        f"no order of cancellable_orders {run.fixture.cancellable_orders} is still processing (each run cancels one)"
    )


async def previewed(run: Run, order_id: str | None, kind: ActionKind = KIND, **request: Any) -> ActionProposal:
    arguments = ActionRequest(kind=kind, case_id=fresh_case_id(), order_id=order_id, **request)
    answer = await run.answer(
        ToolName.PREVIEW_ACTION, {"request": arguments.model_dump(mode="json")}, case_id=arguments.case_id
    )
    return ActionProposal.model_validate(answer)


def agreement_for(run: Run, proposal: ActionProposal, *, confirm: bool = True, approve: bool = True) -> dict[str, Any]:
    """The customer's confirmation and the reviewers' approvals the proposal asks for, signed now."""
    signer = run.keys.signer
    fields: dict[str, Any] = {}
    if confirm and proposal.requires.customer:
        fields["confirmation_token"] = signer.confirmation_token(
            run.customer, case_id=proposal.case_id, digest=proposal.digest
        )
    if approve and proposal.requires.reviewers:
        reviewers = run.keys.reviewers(run.customer.tenant, proposal.requires.reviewers)
        fields["approval_tokens"] = tuple(
            signer.approval_token(
                reviewer, case_id=proposal.case_id, digest=proposal.digest, decision="approve", kid=kid
            )
            for reviewer, kid in reviewers
        )
    return fields


def execution_of(proposal: ActionProposal, **fields: Any) -> ActionExecution:
    return ActionExecution(
        proposal_id=proposal.proposal_id, digest=proposal.digest, idempotency_key=f"kit-{uuid.uuid4().hex}", **fields
    )


async def execute(run: Run, proposal: ActionProposal, execution: ActionExecution) -> Any:
    arguments = {"execution": execution.model_dump(mode="json")}
    return await run.result(ToolName.EXECUTE_ACTION, arguments, case_id=proposal.case_id)


async def refused_unchanged(
    run: Run, proposal: ActionProposal, execution: ActionExecution, code: str, what: str
) -> str:
    order_id = proposal.effect.order_id
    if order_id is None:
        raise CheckFailed(f"the {proposal.kind.value} proposal names no order")
    before = await run.read_order(order_id)
    result = await execute(run, proposal, execution)
    after = await run.read_order(order_id)
    if not result.is_error:
        receipt = (result.structured_content or {}).get("receipt_id", "?")
        raise CheckFailed(f"EXECUTED {what} (receipt {receipt}); the contract refuses it with {code}")
    error = tool_error_from_result(result)
    if error.code != code:
        raise CheckFailed(f"{what} refused {error.code} ({error.message[:100]}); the contract says {code}")
    if (after.status, after.version) != (before.status, before.version):
        raise CheckFailed(f"{what} refused, but {order_id} moved from {before.status} to {after.status}")
    return f"{what} refused {code}, nothing changed"


async def action_default_deny(run: Run) -> str:
    tenant = run.customer.tenant
    denied = [kind for kind in ActionKind if run.keys.directory.action_rule(tenant, kind) is None]
    if not denied:
        raise CheckSkipped(f"the directory allows every action kind in tenant {tenant!r}")
    order_id = run.fixture.cancellable_orders[0] if run.fixture.cancellable_orders else run.fixture.refundable_orders[0]
    for kind in denied:
        request = ActionRequest(
            kind=kind, case_id=fresh_case_id(), order_id=order_id if kind.order_bound else None, address=KIT_ADDRESS
        )
        error = await run.refusal(
            ToolName.PREVIEW_ACTION, {"request": request.model_dump(mode="json")}, case_id=request.case_id
        )
        if error.code != CommerceErrorCode.ACTION_NOT_ALLOWED:
            raise CheckFailed(f"{kind.value}, which the policy does not name, was refused {error.code}")
    names = ", ".join(kind.value for kind in denied)
    return f"{names}, which tenant {tenant!r} does not allow, refused action_not_allowed"


async def action_preview_exact(run: Run) -> str:
    rule = required_rule(run)
    order = await cancellable(run)
    proposal = await previewed(run, order.order_id)
    request = ActionRequest(kind=KIND, case_id=proposal.case_id, order_id=order.order_id)
    expected = action_effect(request, OrderRecords(order=order))
    if proposal.effect != expected:
        raise CheckFailed(f"the proposal's effect {proposal.effect} is not the published rule's {expected}")
    if proposal.rule != rule or proposal.requires.customer != rule.customer_confirms:
        raise CheckFailed(f"the proposal states the rule {proposal.rule}, the directory says {rule}")
    if proposal.requires.reviewers != rule.reviewers_required(expected.refund_cents):
        raise CheckFailed(f"the proposal asks {proposal.requires.reviewers} reviewer(s), the rule says otherwise")
    if proposal.computed_digest() != proposal.digest or proposal.expires_at <= datetime.now(UTC):
        raise CheckFailed("the proposal's digest does not recompute, or it has expired already")
    return (
        f"{order.order_id}: {expected.refund_cents} cents back, {expected.status_before} to {expected.status_after}, "
        f"as the published rule says; digest recomputes; asks the customer: {proposal.requires.customer}, "
        f"reviewers: {proposal.requires.reviewers}"
    )


async def action_address_preview_exact(run: Run) -> str:
    rule = required_rule(run, ActionKind.CHANGE_ORDER_ADDRESS)
    order = await cancellable(run)
    proposal = await previewed(run, order.order_id, ActionKind.CHANGE_ORDER_ADDRESS, address=KIT_ADDRESS)
    effect = proposal.effect
    if (effect.address_after, effect.status_after, effect.refund_cents) != (KIT_ADDRESS, order.status, 0):
        raise CheckFailed(f"the address change's effect {effect} is not the requested address, free, status kept")
    if effect.address_before == KIT_ADDRESS or effect.order_version != order.version:
        raise CheckFailed("the address change's effect does not state the order's current address and version")
    if proposal.rule != rule or proposal.computed_digest() != proposal.digest:
        raise CheckFailed("the address change's proposal states another rule, or its digest does not recompute")
    return f"{order.order_id}: a change to the kit's address, free, status kept, previous address stated"


async def action_address_not_eligible(run: Run) -> str:
    required_rule(run, ActionKind.CHANGE_ORDER_ADDRESS)
    order_id = run.fixture.refundable_orders[0]
    request = ActionRequest(
        kind=ActionKind.CHANGE_ORDER_ADDRESS, case_id=fresh_case_id(), order_id=order_id, address=KIT_ADDRESS
    )
    return await not_eligible(run, request, f"an address change of delivered order {order_id}")


async def not_eligible(run: Run, request: ActionRequest, what: str) -> str:
    """``request``'s preview must be refused ``action_not_eligible`` (``what`` names it in the verdict)."""
    error = await run.refusal(
        ToolName.PREVIEW_ACTION, {"request": request.model_dump(mode="json")}, case_id=request.case_id
    )
    if error.code != CommerceErrorCode.ACTION_NOT_ELIGIBLE:
        raise CheckFailed(f"{what} was refused {error.code}")
    return f"{what} refused action_not_eligible"


async def action_foreign_order(run: Run) -> str:
    required_rule(run)
    answers = []
    for order_id in (run.fixture.foreign_order, run.fixture.missing_order):
        request = ActionRequest(kind=KIND, case_id=fresh_case_id(), order_id=order_id)
        result = await run.result(
            ToolName.PREVIEW_ACTION, {"request": request.model_dump(mode="json")}, case_id=request.case_id
        )
        if not result.is_error:
            raise CheckFailed(f"a proposal was made on {order_id}, which is not the customer's")
        answers.append(text_of(result))
    if answers[0] != answers[1]:
        raise CheckFailed("the foreign order's refusal differs from the missing order's")
    return "a proposal on another customer's order is refused byte-identically to a missing order"


async def action_unconfirmed(run: Run) -> str:
    if not required_rule(run).customer_confirms:
        raise CheckSkipped(f"tenant {run.customer.tenant!r} does not ask the customer to confirm {KIND.value}")
    proposal = await previewed(run, (await cancellable(run)).order_id)
    execution = execution_of(proposal, **agreement_for(run, proposal, confirm=False))
    code = CommerceErrorCode.CONFIRMATION_REQUIRED
    return await refused_unchanged(run, proposal, execution, code, "an execution without the customer's confirmation")


async def action_confirmation_of_another_proposal(run: Run) -> str:
    if not required_rule(run).customer_confirms:
        raise CheckSkipped(f"tenant {run.customer.tenant!r} does not ask the customer to confirm {KIND.value}")
    order = await cancellable(run)
    proposal, other = await previewed(run, order.order_id), await previewed(run, order.order_id)
    fields = agreement_for(run, proposal) | {"confirmation_token": agreement_for(run, other)["confirmation_token"]}
    code = CommerceErrorCode.CONFIRMATION_INVALID
    return await refused_unchanged(
        run, proposal, execution_of(proposal, **fields), code, "the customer's confirmation of another proposal"
    )


async def action_confirmation_of_another_customer(run: Run) -> str:
    if not required_rule(run).customer_confirms:
        raise CheckSkipped(f"tenant {run.customer.tenant!r} does not ask the customer to confirm {KIND.value}")
    other = run.keys.other_customer(run.customer, run.fixture.other_customer)
    if other is None:
        raise CheckSkipped("the directory lists no other customer (the fixture may name other_customer)")
    proposal = await previewed(run, (await cancellable(run)).order_id)
    theirs = run.keys.signer.confirmation_token(other, case_id=proposal.case_id, digest=proposal.digest)
    execution = execution_of(proposal, **agreement_for(run, proposal) | {"confirmation_token": theirs})
    code = CommerceErrorCode.CONFIRMATION_INVALID
    return await refused_unchanged(
        run, proposal, execution, code, f"the issuer's real confirmation of this proposal naming {other.subject}"
    )


async def action_reviewer_of_another_tenant(run: Run) -> str:
    required_rule(run)
    proposal = await previewed(run, (await cancellable(run)).order_id)
    if not proposal.requires.reviewers:
        raise CheckSkipped(f"tenant {run.customer.tenant!r} asks no reviewer to approve this {KIND.value}")
    foreign = run.keys.foreign_reviewer(run.customer.tenant, run.fixture.foreign_reviewer)
    if foreign is None:
        raise CheckSkipped(
            f"the kit holds the key of no reviewer of a tenant other than {run.customer.tenant!r} (name "
            "foreign_reviewer in the fixture, with their key under the state dir)"
        )
    reviewer, kid = foreign
    token = run.keys.signer.approval_token(
        reviewer, case_id=proposal.case_id, digest=proposal.digest, decision=APPROVE, kid=kid
    )
    agreement = agreement_for(run, proposal)
    agreement["approval_tokens"] = (token, *agreement["approval_tokens"][1:])
    execution = execution_of(proposal, **agreement)
    code = CommerceErrorCode.APPROVAL_INVALID
    return await refused_unchanged(
        run, proposal, execution, code, f"{reviewer.subject}'s real approval ({reviewer.tenant}'s reviewer)"
    )


async def action_another_digest(run: Run) -> str:
    required_rule(run)
    order = await cancellable(run)
    proposal, other = await previewed(run, order.order_id), await previewed(run, order.order_id)
    execution = execution_of(proposal, **agreement_for(run, other)).model_copy(update={"digest": other.digest})
    code = CommerceErrorCode.ACTION_CHANGED
    return await refused_unchanged(
        run, proposal, execution, code, "an execution naming another proposal's digest, agreed for that one"
    )


async def action_unapproved(run: Run) -> str:
    required_rule(run)
    proposal = await previewed(run, (await cancellable(run)).order_id)
    if not proposal.requires.reviewers:
        raise CheckSkipped(f"tenant {run.customer.tenant!r} asks no reviewer to approve this {KIND.value}")
    execution = execution_of(proposal, **agreement_for(run, proposal, approve=False))
    code = CommerceErrorCode.APPROVAL_SIGNATURE_REQUIRED
    return await refused_unchanged(run, proposal, execution, code, "an execution without a reviewer's approval")


async def action_expired(run: Run) -> str:
    required_rule(run)
    proposal = await previewed(run, (await cancellable(run)).order_id, expires_in_seconds=EXPIRING_SECONDS)
    while datetime.now(UTC) < proposal.expires_at:  # the proposal's own expiry, as the server stated it
        await asyncio.sleep(0.2)
    execution = execution_of(proposal, **agreement_for(run, proposal))
    return await refused_unchanged(
        run, proposal, execution, CommerceErrorCode.PROPOSAL_EXPIRED, "an execution of an expired proposal"
    )


async def action_executes_once(run: Run) -> str:
    required_rule(run)
    order = await cancellable(run)
    proposal = await previewed(run, order.order_id)
    execution = execution_of(proposal, **agreement_for(run, proposal))
    first = await run.answer(
        ToolName.EXECUTE_ACTION, {"execution": execution.model_dump(mode="json")}, case_id=proposal.case_id
    )
    receipt = ActionReceipt.model_validate(first)
    run.action = (proposal, execution, receipt)
    after = await run.read_order(order.order_id)
    if (after.status, after.version) != (proposal.effect.status_after, order.version + 1):
        raise CheckFailed(f"{order.order_id} is {after.status} at version {after.version} after the action")
    try:
        claims = verify_action_receipt(receipt.signature, key_set(run.keys.directory))
    except CredentialRefused as refused:
        raise CheckFailed(f"receipt {receipt.receipt_id} does not verify with the published key: {refused}") from None
    if (claims.proposal_id, claims.digest, claims.refund_cents) != (
        proposal.proposal_id,
        proposal.digest,
        proposal.effect.refund_cents,
    ):
        raise CheckFailed(f"the signed receipt states {claims.proposal_id}, not this proposal's effect")
    second = ActionReceipt.model_validate(
        await run.answer(
            ToolName.EXECUTE_ACTION, {"execution": execution.model_dump(mode="json")}, case_id=proposal.case_id
        )
    )
    if second != receipt.model_copy(update={"replay": True}):
        raise CheckFailed("the same execution sent again was not answered with its receipt, marked a replay")
    if (await run.read_order(order.order_id)).version != after.version:
        raise CheckFailed(f"{order.order_id} moved again on the repeated execution")
    return (
        f"EXECUTED {KIND.value} on {order.order_id} once; signed receipt {receipt.receipt_id}; the repeat is a replay"
    )


async def action_conflicting_replay(run: Run) -> str:
    required_rule(run)
    await cancellable(run)  # nothing left to cancel: not checked, as the execution was not
    if run.action is None:
        raise CheckFailed("no action was executed (see action_executes_once)")
    proposal, execution, _ = run.action
    fresh = run.keys.signer.confirmation_token(run.customer, case_id=proposal.case_id, digest=proposal.digest)
    changed = execution.model_copy(update={"confirmation_token": fresh})
    return await refused_unchanged(
        run, proposal, changed, CommerceErrorCode.IDEMPOTENCY_CONFLICT, "the executed proposal's key with another body"
    )


def action_checks(before_execution: Sequence[Check] = ()) -> list[Check]:
    """In order: default deny, the exact preview, scoping, the refusals (and ``before_execution``, which
    need the cancellable order still processing), the execution, its replay."""
    return [
        action_default_deny,
        action_preview_exact,
        action_address_preview_exact,
        action_address_not_eligible,
        action_foreign_order,
        action_unconfirmed,
        action_confirmation_of_another_proposal,
        action_confirmation_of_another_customer,
        action_reviewer_of_another_tenant,
        action_another_digest,
        action_unapproved,
        action_expired,
        *before_execution,
        action_executes_once,
        action_conflicting_replay,
    ]
