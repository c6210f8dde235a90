"""What the action tests share: a commerce server's own directory (a copy of the session's demo
directory with the tenant's action rules the test sets), the agreements signed with the demo keys, and a
second processing order for alice (the seeded world has one), on whichever database the test runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from commerce_server.db import InvoiceRow, OrderRow, ShippingAddressRow
from commerce_server.keys import CommerceKeys
from commerce_server.service import CommerceService
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionExecution, ActionProposal, ActionRequest, Address
from contracts.case import Decision
from keystore import demo_identity, load_directory, write_directory
from keystore.directory_edit import set_action
from tests.conftest import DemoKeys

CANCEL = ActionKind.CANCEL_ORDER
SECOND_PROCESSING_ORDER = "QH-1099"
CONFIRM_AND_ONE_REVIEWER = ActionRule()


@dataclass
class ActionWorld:
    engine: Engine
    demo_keys: DemoKeys
    directory_path: Path

    def allow(
        self, tenant: str = "qinghe", rule: ActionRule | None = CONFIRM_AND_ONE_REVIEWER, kind: ActionKind = CANCEL
    ) -> None:
        """The server's directory with ``tenant`` allowing ``kind`` under ``rule`` (None: denying it)."""
        edited = set_action(load_directory(str(self.directory_path)), tenant, kind, rule)
        write_directory(self.directory_path, edited)

    def keys(self) -> CommerceKeys:
        return CommerceKeys(str(self.directory_path), self.demo_keys.commerce_key_path, {})

    def service(self, subject: str = "alice") -> CommerceService:
        return CommerceService(self.engine, demo_identity(subject), keys=self.keys())

    def preview(
        self, order_id: str = "QH-1006", subject: str = "alice", kind: ActionKind = CANCEL, **request: Any
    ) -> ActionProposal:
        ask = ActionRequest(kind=kind, case_id=f"case-{order_id}-{subject}", order_id=order_id, **request)
        return self.service(subject).preview_action(ask)

    def agreement(
        self,
        proposal: ActionProposal,
        *,
        customer: str = "alice",
        reviewers: tuple[str, ...] = ("chen",),
        signed_at: datetime | None = None,
        digest: str | None = None,
        decision: Decision = Decision.APPROVE,
    ) -> dict[str, Any]:
        """A confirmation by ``customer`` and approvals by ``reviewers`` of ``proposal`` (or of ``digest``)."""
        signer = self.demo_keys.signer
        signed = digest or proposal.digest
        fields: dict[str, Any] = {
            "confirmation_token": signer.confirmation_token(
                demo_identity(customer), case_id=proposal.case_id, digest=signed, now=signed_at
            )
        }
        fields["approval_tokens"] = tuple(
            signer.approval_token(
                demo_identity(reviewer),
                case_id=proposal.case_id,
                digest=signed,
                decision=decision.value,
                now=signed_at,
            )
            for reviewer in reviewers
        )
        return fields

    def execution(self, proposal: ActionProposal, *, key: str = "key-1", **fields: Any) -> ActionExecution:
        agreed = self.agreement(proposal) | fields
        return ActionExecution(proposal_id=proposal.proposal_id, digest=proposal.digest, idempotency_key=key, **agreed)

    def order(self, order_id: str = "QH-1006") -> tuple[str, int, int, str]:
        """(status, version, refunded cents, invoice state) as the database holds them."""
        with Session(self.engine) as session:
            row = session.get(OrderRow, order_id)
            invoice = session.get(InvoiceRow, f"INV-{order_id}")
            assert row is not None and invoice is not None
            return row.status, row.version, row.refunded_cents, invoice.state

    def address(self, order_id: str = "QH-1006") -> Address | None:
        with Session(self.engine) as session:
            row = session.get(ShippingAddressRow, order_id)
            return None if row is None else Address.model_validate(row.model_dump(exclude={"order_id"}))

    def add_processing_order(self) -> None:
        """A second processing order of alice, a copy of QH-1006 (for the caps)."""
        with Session(self.engine) as session:
            original = session.get(OrderRow, "QH-1006")
            invoice = session.get(InvoiceRow, "INV-QH-1006")
            assert original is not None and invoice is not None
            order = original.model_dump() | {"order_id": SECOND_PROCESSING_ORDER}
            copied = invoice.model_dump() | {"invoice_id": f"INV-{SECOND_PROCESSING_ORDER}"}
            session.add(OrderRow.model_validate(order))
            session.commit()
            session.add(InvoiceRow.model_validate(copied | {"order_id": SECOND_PROCESSING_ORDER}))
            session.commit()


def action_world(engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    path = tmp_path / "commerce-directory.json"
    path.write_text(demo_keys.directory_path.read_text(encoding="utf-8"), encoding="utf-8")
    return ActionWorld(engine, demo_keys, path)
