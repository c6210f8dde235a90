"""``preview_action``: the exact effect of an action the tenant's policy allows, stored as a proposal.

Default deny: an action the tenant's rule (in this server's own copy of the directory) does not name is
refused before any record is read. Otherwise the order is read as every read is (id, tenant, owner), or,
for the account's own action, the signed-in customer's account record (never another's: it is keyed by
the bound identity); the action's rule (:mod:`knowledge.action_rules`) computes the effect from it, the
caps are checked, and the proposal, with the rule that applied, who must agree, its expiry and its
digest, is stored and returned.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, select

from commerce_server.action_records import check_caps
from commerce_server.db import (
    ActionProposalRow,
    CustomerAccountRow,
    ExchangeRow,
    ProductVariantRow,
    ReturnRow,
    ShippingAddressRow,
)
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionProposal, ActionRequest, Address, Agreement, CustomerAccount
from contracts.commerce import Order, ProductVariant
from contracts.directory import Directory
from contracts.errors import CommerceErrorCode, SupportError, error_from_code
from contracts.identity import Identity
from knowledge.action_rules import AccountRecords, OrderRecords, action_effect
from knowledge.refund_quote import policy_page_versions
from knowledge.store import KnowledgeBase, default_knowledge_base


def allowed_rule(directory: Directory, identity: Identity, kind: ActionKind) -> ActionRule:
    """The rule the customer's tenant declares for ``kind``; ``action_not_allowed`` when it declares none."""
    rule = directory.action_rule(identity.tenant, kind)
    if rule is None:
        raise _not_allowed(kind)
    return rule


def required_agreement(directory: Directory, identity: Identity, kind: ActionKind, amount_cents: int) -> Agreement:
    """Who must agree to ``kind`` moving ``amount_cents`` for this customer (:meth:`Directory.action_agreement`)."""
    agreement = directory.action_agreement(identity.tenant, kind, amount_cents)
    if agreement is None:
        raise _not_allowed(kind)
    return agreement


def _not_allowed(kind: ActionKind) -> SupportError:
    return error_from_code(
        CommerceErrorCode.ACTION_NOT_ALLOWED, f"The merchant's policy does not allow {kind.value} through this service."
    )


def action_records(
    session: Session,
    identity: Identity,
    request: ActionRequest,
    directory: Directory,
    read_order: Callable[[Session, str], Order],
    knowledge: KnowledgeBase | None = None,
) -> OrderRecords | AccountRecords:
    """What the action's rule reads: the order's records, or the signed-in customer's own account. A refund
    also reads the versions of its rule's pages in ``knowledge`` (None: the packaged knowledge base)."""
    if request.order_id is not None:
        records = order_records(session, read_order(session, request.order_id), directory)
        if request.kind is not ActionKind.REFUND_ORDER:
            return records
        versions = policy_page_versions(knowledge or default_knowledge_base(), tenant=records.policy_tenant)
        return replace(records, page_versions=versions)
    row = session.get(CustomerAccountRow, (identity.tenant, identity.subject))
    if row is None:
        raise error_from_code(
            CommerceErrorCode.ACTION_NOT_ELIGIBLE, "This account has no record at the merchant to change."
        )
    fields = row.model_dump()
    address = Address.model_validate({name: fields.pop(name) for name in Address.model_fields})
    account = CustomerAccount.model_validate(fields | {"default_address": address})
    return AccountRecords(account=account, policy_tenant=directory.policy_tenant(identity.tenant))


def order_records(session: Session, order: Order, directory: Directory) -> OrderRecords:
    """What the actions' rules read about ``order`` (read after the order itself, so only for an order of
    the caller): its delivery address, whether a return or exchange is open, whose returns terms it
    follows, and its product's variants."""
    row = session.get(ShippingAddressRow, order.order_id)
    address = None if row is None else Address.model_validate(row.model_dump(exclude={"order_id"}))
    opened = session.get(ReturnRow, order.order_id) or session.get(ExchangeRow, order.order_id)
    return OrderRecords(
        order=order,
        address=address,
        return_open=opened is not None,
        policy_tenant=directory.policy_tenant(order.tenant),
        variants=product_family(session, order.sku),
    )


def product_family(session: Session, sku: str) -> tuple[ProductVariant, ...]:
    """The catalogue's variants of ``sku``'s product, ``sku`` among them (none: it has no variants)."""
    own = session.get(ProductVariantRow, sku)
    if own is None:
        return ()
    family = session.exec(select(ProductVariantRow).where(ProductVariantRow.family == own.family))
    return tuple(ProductVariant.model_validate(row.model_dump()) for row in family)


def preview_action(
    session: Session,
    identity: Identity,
    request: ActionRequest,
    *,
    directory: Directory,
    ledger_id: str,
    read_order: Callable[[Session, str], Order],
    now: datetime,
    knowledge: KnowledgeBase | None = None,
) -> ActionProposal:
    rule = allowed_rule(directory, identity, request.kind)
    effect = action_effect(request, action_records(session, identity, request, directory, read_order, knowledge))
    check_caps(session, identity, request.kind, rule, adding_cents=effect.refund_cents, now=now)
    lifetime = timedelta(minutes=rule.expires_minutes)
    if request.expires_in_seconds is not None:
        lifetime = min(lifetime, timedelta(seconds=request.expires_in_seconds))
    created_at = now.replace(microsecond=0)
    fields: dict[str, Any] = {
        "proposal_id": "AP-" + secrets.token_hex(12),
        "kind": request.kind,
        "case_id": request.case_id,
        "tenant": identity.tenant,
        "customer": identity.subject,
        "ledger_id": ledger_id,
        "effect": effect,
        "rule": rule,
        "requires": required_agreement(directory, identity, request.kind, effect.refund_cents),
        "created_at": created_at,
        "expires_at": created_at + lifetime,
    }
    draft = ActionProposal.model_validate(fields | {"digest": "0" * 64})
    proposal = draft.model_copy(update={"digest": draft.computed_digest()})
    session.add(
        ActionProposalRow(
            proposal_id=proposal.proposal_id,
            tenant=identity.tenant,
            customer=identity.subject,
            case_id=proposal.case_id,
            kind=proposal.kind.value,
            order_id=effect.order_id,
            digest=proposal.digest,
            body=proposal.model_dump_json(),
            created_at=created_at,
        )
    )
    session.commit()
    return proposal
