"""The retail server's operations for one signed-in customer of one case: τ²-bench's reads, its writes
as proposals, and the execution of a proposal everyone agreed to.

Identity is the customer the process or the request is bound to, never an argument: the find-user tools
answer only with that customer's id (another customer's e-mail or name is "not found", as is another
customer's order), which is stricter than the benchmark, whose tools answer for anyone.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, update
from sqlmodel import Session, col, select

from commerce_server.action_agreement import agreement_of, refuse_reused
from contracts.action_credentials import RECEIPT_AUDIENCE, RECEIPT_VALIDITY
from contracts.action_policy import ActionRule
from contracts.actions import ActionExecution
from contracts.credentials import COMMERCE_KID, sign
from contracts.directory import Directory
from contracts.errors import CommerceErrorCode, SupportError, error_from_code
from contracts.identity import Identity
from contracts.retail import (
    RetailEffect,
    RetailProposal,
    RetailReceipt,
    RetailWrite,
)
from retail_server import records, rules
from retail_server import tau2_format as t2
from retail_server.apply import apply_effect
from retail_server.arguments import WriteArguments
from retail_server.db import (
    RetailCredentialUseRow,
    RetailOrderRow,
    RetailProductRow,
    RetailProposalRow,
    RetailUserRow,
    RetailVariantRow,
)

TRANSFERRED = "Transfer successful"


def _not_found(what: str) -> SupportError:
    return error_from_code(CommerceErrorCode.CUSTOMER_NOT_FOUND, f"{what} not found")


class RetailService:
    """One customer's view of the retail database, and their proposals."""

    def __init__(
        self,
        engine: Engine,
        customer: Identity,
        *,
        case_id: str,
        directory: Callable[[], Directory],
        signing_key: Callable[[], object],
        now: Callable[[], datetime],
    ) -> None:
        self._engine = engine
        self._customer = customer
        self._case_id = case_id
        self._directory = directory
        self._signing_key = signing_key
        self._now = now

    # --- reads ---------------------------------------------------------------------------------------

    def find_user_id_by_email(self, email: str) -> str:
        with Session(self._engine) as session:
            row = session.get(RetailUserRow, self._customer.subject)
        if row is None or row.email.lower() != email.lower():
            raise _not_found("User")
        return row.user_id

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        with Session(self._engine) as session:
            row = session.get(RetailUserRow, self._customer.subject)
        if row is None or (row.first_name.lower(), row.last_name.lower(), row.zip) != (
            first_name.lower(),
            last_name.lower(),
            zip,
        ):
            raise _not_found("User")
        return row.user_id

    def get_user_details(self, user_id: str) -> t2.User:
        with Session(self._engine) as session:
            return self._own_user(session, user_id)

    def get_order_details(self, order_id: str) -> t2.Order:
        with Session(self._engine) as session:
            return self._own_order(session, order_id)[0]

    def get_product_details(self, product_id: str) -> t2.Product:
        with Session(self._engine) as session:
            product = records.read_product(session, product_id)
        if product is None:
            raise error_from_code(CommerceErrorCode.PRODUCT_NOT_FOUND, "Product not found")
        return product

    def list_all_product_types(self) -> str:
        with Session(self._engine) as session:
            products = session.exec(select(RetailProductRow))
            return json.dumps({p.name: p.product_id for p in products}, sort_keys=True)

    # --- writes, as proposals ------------------------------------------------------------------------

    def propose(self, kind: RetailWrite, arguments: dict[str, object]) -> RetailProposal:
        """The proposal of ``kind`` with ``arguments`` (τ²-bench's), stored until it is executed; nothing
        else changes. The tenant's rule for the kind says who must agree (none named: refused)."""
        rule = self._allowed(self._directory(), kind)
        with Session(self._engine) as session:
            effect = self._effect(session, kind, arguments)
            now = self._now()
            self._within_caps(session, kind, rule, effect, now)
            agreement = self._directory().action_agreement(
                self._customer.tenant, kind.action_kind, effect.refund_cents + effect.charge_cents
            )
            assert agreement is not None, "the rule was read above"
            unsigned = {
                "proposal_id": f"AP-{uuid.uuid4().hex[:24]}",
                "kind": kind,
                "arguments": arguments,
                "case_id": self._case_id,
                "tenant": self._customer.tenant,
                "customer": self._customer.subject,
                "effect": effect,
                "rule": rule,
                "requires": agreement,
                "created_at": now,
                "expires_at": now + timedelta(minutes=rule.expires_minutes),
                "digest": "0" * 64,
            }
            draft = RetailProposal.model_validate(unsigned)
            proposal = draft.model_copy(update={"digest": draft.computed_digest()})
            session.add(
                RetailProposalRow(
                    proposal_id=proposal.proposal_id,
                    case_id=proposal.case_id,
                    customer=proposal.customer,
                    kind=kind.value,
                    digest=proposal.digest,
                    proposal_json=proposal.model_dump_json(),
                    created_at=now,
                )
            )
            session.commit()
        return proposal

    def _effect(self, session: Session, kind: RetailWrite, arguments: dict[str, object]) -> RetailEffect:
        args = WriteArguments(arguments)
        if kind is RetailWrite.MODIFY_USER_ADDRESS:
            user = self._own_user(session, args.text("user_id"))
            return rules.change_default_address(user, self._user_version(session, user.user_id), args.address())
        order, versions = self._own_order(session, args.text("order_id"))
        user = self._own_user(session, order.user_id)
        if kind is RetailWrite.CANCEL_PENDING_ORDER:
            return rules.cancel(order, user, versions, args.text("reason"))
        if kind is RetailWrite.MODIFY_PENDING_ORDER_ADDRESS:
            return rules.change_order_address(order, user, versions, args.address())
        if kind is RetailWrite.MODIFY_PENDING_ORDER_PAYMENT:
            return rules.change_payment(order, user, versions, args.text("payment_method_id"))
        if kind is RetailWrite.RETURN_DELIVERED_ORDER_ITEMS:
            return rules.return_items(order, user, versions, args.ids("item_ids"), args.text("payment_method_id"))
        catalogue = self._catalogue(session, args.ids("new_item_ids"))
        swap = rules.ItemSwap(args.ids("item_ids"), args.ids("new_item_ids"), args.text("payment_method_id"))
        change = rules.modify_items if kind is RetailWrite.MODIFY_PENDING_ORDER_ITEMS else rules.exchange_items
        return change(order, user, versions, swap, catalogue)

    # --- execution -----------------------------------------------------------------------------------

    def execute(self, execution: ActionExecution) -> RetailReceipt:
        """Execute the proposal once: everyone it needs agreed in time, the effect computed now is the one
        proposed (else ``action_changed``), written in one transaction with the receipt."""
        with Session(self._engine) as session:
            # Every write of a customer changes their own records only. Writing their row first, unchanged,
            # holds it (PostgreSQL: a row lock; SQLite: the database's write lock, taken by the first write of
            # a transaction) until this one commits, so their executions run one at a time and everything
            # below is read after any execution that went first.
            same_version = {"version": RetailUserRow.version}
            session.exec(
                update(RetailUserRow).where(col(RetailUserRow.user_id) == self._customer.subject).values(same_version)
            )
            row = session.exec(
                select(RetailProposalRow).where(col(RetailProposalRow.proposal_id) == execution.proposal_id)
            ).first()
            if row is None or (row.customer, row.case_id) != (self._customer.subject, self._case_id):
                raise error_from_code(CommerceErrorCode.PROPOSAL_NOT_ACCESSIBLE, "No such proposal of this case.")
            if row.receipt_json is not None:
                return self._replayed(row, execution)
            proposal = RetailProposal.model_validate_json(row.proposal_json)
            if execution.digest != proposal.digest:
                raise error_from_code(CommerceErrorCode.ACTION_CHANGED, "The digest is not this proposal's.")
            now = self._now()
            directory = self._directory()
            rule = self._allowed(directory, proposal.kind)
            moved = proposal.effect.refund_cents + proposal.effect.charge_cents
            if directory.action_agreement(self._customer.tenant, proposal.kind.action_kind, moved) != proposal.requires:
                raise error_from_code(
                    CommerceErrorCode.ACTION_CHANGED,
                    "The merchant's policy on who must agree changed since the proposal; ask for a new one.",
                )
            agreed = agreement_of(proposal, execution, self._customer, directory, now=now)
            refuse_reused(agreed, self._customer, lambda jti: session.get(RetailCredentialUseRow, jti) is not None)
            self._within_caps(session, proposal.kind, rule, proposal.effect, now)
            current = self._effect(session, proposal.kind, proposal.arguments)
            if current != proposal.effect:
                raise error_from_code(
                    CommerceErrorCode.ACTION_CHANGED, "The records changed since the proposal; ask for a new one."
                )
            apply_effect(session, proposal.effect)
            session.flush()
            result = self._result(session, proposal.effect)
            receipt = self._receipt(proposal, agreed.agreed_by(self._customer.subject), now, result)
            for jti, _ in agreed.uses(self._customer.subject):
                session.add(RetailCredentialUseRow(jti=jti, proposal_id=proposal.proposal_id, used_at=now))
            row.idempotency_key = execution.idempotency_key
            row.execution_digest = execution.body_digest()
            row.receipt_json = receipt.model_dump_json()
            row.executed_at = now
            row.moved_cents = proposal.effect.refund_cents + proposal.effect.charge_cents
            session.add(row)
            session.commit()
        return receipt

    def _replayed(self, row: RetailProposalRow, execution: ActionExecution) -> RetailReceipt:
        if row.execution_digest != execution.body_digest():
            raise error_from_code(
                CommerceErrorCode.IDEMPOTENCY_CONFLICT, "This proposal was executed by another request."
            )
        assert row.receipt_json is not None
        return RetailReceipt.model_validate_json(row.receipt_json).model_copy(update={"replay": True})

    def _result(self, session: Session, effect: RetailEffect) -> dict[str, object]:
        if effect.order_id is None:
            user = records.read_user(session, effect.user_id)
            assert user is not None
            return user.model_dump(mode="json", exclude_none=True)
        order = records.read_order(session, effect.order_id)
        assert order is not None
        return order.model_dump(mode="json")

    def _receipt(
        self, proposal: RetailProposal, agreed_by: tuple[str, ...], now: datetime, result: dict[str, object]
    ) -> RetailReceipt:
        receipt_id = f"RR-{uuid.uuid4().hex[:16]}"
        claims = {
            "aud": RECEIPT_AUDIENCE,
            "receipt_id": receipt_id,
            "proposal_id": proposal.proposal_id,
            "kind": proposal.kind.value,
            "case_id": proposal.case_id,
            "digest": proposal.digest,
            "refund_cents": proposal.effect.refund_cents,
            "charge_cents": proposal.effect.charge_cents,
            "agreed_by": list(agreed_by),
            "iat": int(now.timestamp()),
            "exp": int((now + RECEIPT_VALIDITY).timestamp()),
            "jti": receipt_id,
        }
        return RetailReceipt(
            receipt_id=receipt_id,
            proposal_id=proposal.proposal_id,
            kind=proposal.kind,
            case_id=proposal.case_id,
            digest=proposal.digest,
            agreed_by=agreed_by,
            executed_at=now,
            refund_cents=proposal.effect.refund_cents,
            charge_cents=proposal.effect.charge_cents,
            result=result,
            signature=sign(claims, self._signing_key(), kid=COMMERCE_KID),
        )

    def _allowed(self, directory: Directory, kind: RetailWrite) -> ActionRule:
        """The tenant's rule for ``kind`` now; ``action_not_allowed`` when its policy names none (default deny)."""
        rule = directory.action_rule(self._customer.tenant, kind.action_kind)
        if rule is None:
            raise error_from_code(
                CommerceErrorCode.ACTION_NOT_ALLOWED, f"The merchant's policy does not allow {kind.value} here."
            )
        return rule

    def _within_caps(
        self, session: Session, kind: RetailWrite, rule: ActionRule, effect: RetailEffect, now: datetime
    ) -> None:
        """``action_cap_reached`` when one more ``kind`` would pass a cap of the tenant's rule, counting the
        customer's executed writes of the kind (at the proposal, and again at the execution)."""
        if rule.max_per_customer_per_day is None and rule.max_cents_per_customer_per_30_days is None:
            return
        passed = rule.cap_passed(
            kind.action_kind,
            count_today=self._executed(session, kind, func.count(), since=now - timedelta(days=1)),
            total_30_days=self._executed(
                session, kind, func.sum(RetailProposalRow.moved_cents), since=now - timedelta(days=30)
            ),
            adding_cents=effect.refund_cents + effect.charge_cents,
        )
        if passed is not None:
            raise error_from_code(CommerceErrorCode.ACTION_CAP_REACHED, passed)

    def _executed(self, session: Session, kind: RetailWrite, measure: Any, *, since: datetime) -> int:
        """``measure`` (a count, or a sum of cents moved) over the customer's writes of ``kind`` executed since."""
        query = select(func.coalesce(measure, 0)).where(
            RetailProposalRow.customer == self._customer.subject,
            RetailProposalRow.kind == kind.value,
            col(RetailProposalRow.executed_at) >= since,
        )
        return int(session.exec(query).one())

    # --- records of this customer --------------------------------------------------------------------

    def _own_user(self, session: Session, user_id: str) -> t2.User:
        user = records.read_user(session, user_id) if user_id == self._customer.subject else None
        if user is None:
            raise _not_found("User")
        return user

    def _own_order(self, session: Session, order_id: str) -> tuple[t2.Order, tuple[int, int]]:
        row = session.get(RetailOrderRow, order_id)
        if row is None or row.user_id != self._customer.subject:
            raise error_from_code(CommerceErrorCode.ORDER_NOT_ACCESSIBLE, "Order not found")
        order = records.read_order(session, order_id)
        assert order is not None
        return order, (self._user_version(session, row.user_id), row.version)

    def _user_version(self, session: Session, user_id: str) -> int:
        row = session.get(RetailUserRow, user_id)
        assert row is not None
        return row.version

    def _catalogue(self, session: Session, item_ids: list[str]) -> rules.Catalogue:
        variants = session.exec(select(RetailVariantRow).where(col(RetailVariantRow.item_id).in_(item_ids)))
        return rules.Catalogue(
            variants={
                v.item_id: (v.product_id, v.available, v.price_cents, json.loads(v.options_json)) for v in variants
            }
        )
