"""``execute_action``: an agreed proposal, re-checked and executed once, with a signed receipt.

Order of checks: the proposal is the caller's (another customer's and a missing one are refused alike);
the idempotency claim (:mod:`commerce_server.action_records`: a replay, a conflict or a twin in flight is
answered from the record); then, with the claim held, the digest (the one sent, the stored one and the
one recomputed from the stored fields must agree), the tenant's rule and who must agree as this server's
directory states them now (default deny; a policy changed since the proposal asks for a new one),
everyone's agreement (:mod:`commerce_server.action_agreement`), the ledger, for a refund that its case
holds no decision yet (:mod:`commerce_server.case_decisions`: paid or closed either way), the effect
computed again from today's order and its records, or the account (it must equal the proposal's), and the
caps. Only then one transaction changes the order or the customer's account (guarded by its version),
moves the address, opens the return or exchange or voids the invoice where the effect says so, writes a
refund's ``paid`` case decision, consumes every agreeing token, and completes the claim with the signed
receipt. Any refusal releases the claim: a refusal is never cached.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from commerce_server.action_agreement import Agreed, check_agreement
from commerce_server.action_preview import action_records, allowed_rule, required_agreement
from commerce_server.action_receipts import signed_action_receipt
from commerce_server.action_records import ExecutionState, check_caps, claim_execution, lock_case, release_claim
from commerce_server.case_decisions import paid_decision, refuse_if_closed, refuse_if_decided
from commerce_server.db import (
    ActionCredentialUseRow,
    ActionExecutionRow,
    ActionProposalRow,
    CustomerAccountRow,
    ExchangeRow,
    InvoiceRow,
    OrderRow,
    ReturnRow,
    ShippingAddressRow,
)
from commerce_server.keys import CommerceKeys
from contracts.action_policy import ActionKind
from contracts.actions import ActionExecution, ActionProposal, ActionReceipt
from contracts.commerce import Order
from contracts.errors import CommerceErrorCode, error_from_code
from contracts.identity import Identity
from contracts.logs import log_fields
from knowledge.action_rules import action_effect, request_of
from knowledge.store import KnowledgeBase

EXECUTED_LOGGER = "commerce_server.actions.executed"
executed_log = logging.getLogger(EXECUTED_LOGGER)


def receipt_id_for(proposal_id: str) -> str:
    """``ACT-`` and 16 hex characters derived from the proposal: one proposal, one receipt id."""
    return "ACT-" + hashlib.sha256(proposal_id.encode("utf-8")).hexdigest()[:16]


class ActionExecutor:
    """One ``execute_action`` request for one bound identity, in one session."""

    def __init__(
        self,
        session: Session,
        identity: Identity,
        *,
        keys: CommerceKeys,
        ledger_id: Callable[[], str],
        read_order: Callable[[Session, str], Order],
        now: datetime,
        knowledge: KnowledgeBase | None = None,
    ) -> None:
        """``knowledge`` holds the refund rule's pages a ``refund_order`` is quoted against again (None: the
        packaged knowledge base)."""
        self._session = session
        self._identity = identity
        self._keys = keys
        self._ledger_id = ledger_id
        self._read_order = read_order
        self._now = now
        self._knowledge = knowledge

    def execute(self, execution: ActionExecution, *, token_case: str | None) -> ActionReceipt:
        proposal = own_proposal(self._session, self._identity, execution.proposal_id, token_case=token_case)
        self._keys.signing_key()  # a server that could not sign the receipt executes nothing
        replay = claim_execution(self._session, self._identity, execution, kind=proposal.kind, now=self._now)
        if replay is not None:
            return replay
        try:
            agreed = self._checked(proposal, execution)
            return self._record(proposal, execution, agreed)
        except Exception:  # a refusal, or a failure mid-way: nothing was executed, and nothing is cached
            release_claim(self._session, proposal.proposal_id)
            raise

    def _checked(self, proposal: ActionProposal, execution: ActionExecution) -> Agreed:
        if not (execution.digest == proposal.digest == proposal.computed_digest()):
            raise error_from_code(CommerceErrorCode.ACTION_CHANGED, "The digest sent is not this proposal's.")
        directory = self._keys.directory()
        rule = allowed_rule(directory, self._identity, proposal.kind)
        agreement = required_agreement(directory, self._identity, proposal.kind, proposal.effect.refund_cents)
        if rule != proposal.rule or agreement != proposal.requires:
            raise error_from_code(
                CommerceErrorCode.ACTION_CHANGED,
                "The merchant's policy for this action changed since the proposal; ask for a new proposal.",
            )
        agreed = check_agreement(self._session, proposal, execution, self._identity, directory, now=self._now)
        if proposal.ledger_id != self._ledger_id():
            raise error_from_code(CommerceErrorCode.LEDGER_MISMATCH, "The proposal was made on another ledger.")
        if proposal.kind is ActionKind.REFUND_ORDER:
            refuse_if_decided(self._session, proposal.case_id, approval_id=proposal.proposal_id)
        else:
            refuse_if_closed(self._session, proposal.case_id)
        request = request_of(proposal.kind, proposal.case_id, proposal.effect)
        records = action_records(self._session, self._identity, request, directory, self._read_order, self._knowledge)
        effect = action_effect(request, records)
        if effect != proposal.effect:
            raise error_from_code(
                CommerceErrorCode.ACTION_CHANGED,
                f"The {_record_name(proposal)} changed since the proposal; ask for a new proposal.",
            )
        check_caps(self._session, self._identity, proposal.kind, rule, adding_cents=effect.refund_cents, now=self._now)
        return agreed

    def _record(self, proposal: ActionProposal, execution: ActionExecution, agreed: Agreed) -> ActionReceipt:
        effect = proposal.effect
        session = self._session
        lock_case(session, proposal.case_id)  # before any write: a closure of the case commits first, or waits
        if effect.status_after is not None and effect.order_version is not None:
            moved = session.exec(
                update(OrderRow)
                .where(OrderRow.order_id == effect.order_id, OrderRow.version == effect.order_version)  # type: ignore[arg-type]
                .values(
                    status=effect.status_after.value,
                    refunded_cents=OrderRow.refunded_cents + effect.refund_cents,
                    version=effect.order_version + 1,
                )
            )
        else:
            moved = session.exec(
                update(CustomerAccountRow)
                .where(
                    CustomerAccountRow.tenant == self._identity.tenant,  # type: ignore[arg-type]
                    CustomerAccountRow.customer == self._identity.subject,  # type: ignore[arg-type]
                    CustomerAccountRow.version == effect.account_version,  # type: ignore[arg-type]
                )
                .values(**(effect.address_after.model_dump() if effect.address_after else {}))
                .values(version=CustomerAccountRow.version + 1)
            )
        if moved.rowcount != 1:
            raise error_from_code(
                CommerceErrorCode.ACTION_CHANGED,
                f"The {_record_name(proposal)} changed while the action ran; ask for a new proposal.",
            )
        write_effect_records(session, proposal, now=self._now)
        self._keep_case_decision(proposal)
        for jti, subject in agreed.uses(self._identity.subject):
            session.add(
                ActionCredentialUseRow(jti=jti, proposal_id=proposal.proposal_id, subject=subject, used_at=self._now)
            )
        receipt = signed_action_receipt(
            proposal,
            receipt_id=receipt_id_for(proposal.proposal_id),
            agreed=agreed,
            executed_at=self._now,
            signing_key=self._keys.signing_key(),
        )
        claim = session.get(ActionExecutionRow, proposal.proposal_id)
        if claim is None or claim.state != ExecutionState.IN_FLIGHT.value:
            raise error_from_code(CommerceErrorCode.IDEMPOTENCY_CONFLICT, "The execution's claim was lost.")
        claim.state = ExecutionState.DONE.value
        claim.executed_at = self._now
        claim.refund_cents = effect.refund_cents
        claim.receipt = receipt.model_dump_json()
        session.add(claim)
        session.commit()
        executed_log.info(
            "executed %s on %s: %s cents, receipt %s",
            proposal.kind.value,
            effect.target,
            effect.refund_cents,
            receipt.receipt_id,
            extra=log_fields(case_id=proposal.case_id, tool="execute_action"),
        )
        return receipt

    def _keep_case_decision(self, proposal: ActionProposal) -> None:
        """In the action's transaction, with its order's or account's row written: a refund writes the case's
        ``paid`` decision (a case paid or closed the other way meanwhile fails the insert, and nothing is
        paid); any other kind checks again that the case was not closed since the first check (SQLite then
        holds the database's write lock, so no closure can commit meanwhile)."""
        session, case_id = self._session, proposal.case_id
        if proposal.kind is not ActionKind.REFUND_ORDER:
            refuse_if_closed(session, case_id)
            return
        identity, now = self._identity, self._now
        session.add(
            paid_decision(case_id, identity=identity, digest=proposal.digest, approval_id=proposal.proposal_id, at=now)
        )
        try:
            session.flush()
        except IntegrityError:
            session.rollback()
            refuse_if_decided(session, case_id, approval_id=proposal.proposal_id)
            raise


def own_proposal(session: Session, identity: Identity, proposal_id: str, *, token_case: str | None) -> ActionProposal:
    """The caller's stored proposal (and, under a bearer token, of the token's case); another customer's and
    a missing one are refused alike."""
    row = session.get(ActionProposalRow, proposal_id)
    mine = row is not None and (row.tenant, row.customer) == (identity.tenant, identity.subject)
    if row is None or not mine or (token_case is not None and row.case_id != token_case):
        raise error_from_code(
            CommerceErrorCode.PROPOSAL_NOT_ACCESSIBLE, "No such proposal is accessible to this customer and case."
        )
    return ActionProposal.model_validate_json(row.body)


def _record_name(proposal: ActionProposal) -> str:
    return "order" if proposal.kind.order_bound else "account"


def write_effect_records(session: Session, proposal: ActionProposal, *, now: datetime) -> None:
    """What the effect changes beside the order's row, in the action's transaction: the delivery address,
    the return or exchange it opens, the invoice it voids."""
    effect, order_id = proposal.effect, proposal.effect.order_id
    if order_id is None:  # the account's own action: its row moved with its version
        return
    if effect.address_after is not None:
        address = effect.address_after.model_dump()
        row = session.get(ShippingAddressRow, order_id)
        session.add(row.sqlmodel_update(address) if row else ShippingAddressRow(order_id=order_id, **address))
    opened, swap = effect.return_opened, effect.exchange_opened
    if opened is not None:
        session.add(
            ReturnRow(
                order_id=order_id,
                proposal_id=proposal.proposal_id,
                units=opened.units,
                refund_due_cents=opened.refund_due_cents,
                currency=effect.currency,
                opened_at=now,
            )
        )
    if swap is not None:
        session.add(
            ExchangeRow(
                order_id=order_id,
                proposal_id=proposal.proposal_id,
                sku_before=swap.sku_before,
                sku_after=swap.sku_after,
                units=swap.units,
                difference_cents=swap.difference_cents,
                currency=effect.currency,
                opened_at=now,
            )
        )
    if effect.invoice_void:
        session.exec(update(InvoiceRow).where(InvoiceRow.order_id == order_id).values(state="void"))  # type: ignore[arg-type]
