"""``return_items`` at the commerce service, on both databases: the return opened once with the refund due
on check-in, nothing paid now, a second return of the same order refused, and a return the terms do not
allow refused before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session

from commerce_server.db import ReturnRow
from contracts.action_credentials import verify_action_receipt
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ReturnTerms
from contracts.credentials import key_set
from contracts.errors import SupportError
from tests.commerce_server.support_actions import ActionWorld, action_world
from tests.conftest import DemoKeys

RETURN = ActionKind.RETURN_ITEMS
RETURNABLE = "QH-1004"
"""Alice's desk stand, delivered 2026-09-08 (day 4 of 30), not back at the warehouse yet."""


@pytest.fixture
def world(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    allowed = action_world(commerce_engine, demo_keys, tmp_path)
    allowed.allow(kind=RETURN, rule=ActionRule(reviewers=0))
    return allowed


def opened_return(engine: Engine, order_id: str = RETURNABLE) -> ReturnRow | None:
    with Session(engine) as session:
        return session.get(ReturnRow, order_id)


def test_an_agreed_return_opens_once_and_pays_nothing_until_check_in(world: ActionWorld) -> None:
    proposal = world.preview(RETURNABLE, kind=RETURN)
    execution = world.execution(proposal, approval_tokens=())

    receipt = world.service().execute_action(execution)
    again = world.service().execute_action(execution)

    assert proposal.effect.return_opened == ReturnTerms(units=1, refund_due_cents=10900)
    assert (proposal.requires.customer, proposal.requires.reviewers) == (True, 0)
    assert (receipt.kind, receipt.refund_cents, receipt.status_after, receipt.agreed_by) == (
        "return_items",
        0,
        "delivered",
        ("alice",),
    )
    claims = verify_action_receipt(receipt.signature, key_set(world.keys().directory()))
    assert (claims.proposal_id, claims.digest, claims.kind) == (proposal.proposal_id, proposal.digest, "return_items")
    assert (again.replay, again.receipt_id) == (True, receipt.receipt_id)
    assert world.order(RETURNABLE) == ("delivered", 2, 0, "issued")
    opened = opened_return(world.engine)
    assert opened is not None
    assert (opened.proposal_id, opened.units, opened.refund_due_cents) == (proposal.proposal_id, 1, 10900)


def test_a_second_return_of_the_same_order_is_refused_at_preview(world: ActionWorld) -> None:
    first = world.preview(RETURNABLE, kind=RETURN)
    world.service().execute_action(world.execution(first, approval_tokens=()))

    with pytest.raises(SupportError) as refused:
        world.preview(RETURNABLE, kind=RETURN)

    assert (refused.value.code, refused.value.message) == (
        "action_not_eligible",
        "A return or an exchange of this order is open already.",
    )


def test_a_return_proposed_twice_executes_once(world: ActionWorld) -> None:
    first = world.preview(RETURNABLE, kind=RETURN)
    second = world.preview(RETURNABLE, kind=RETURN)
    world.service().execute_action(world.execution(first, approval_tokens=()))

    with pytest.raises(SupportError) as refused:
        world.service().execute_action(world.execution(second, key="key-2", approval_tokens=()))

    assert (refused.value.code, refused.value.message) == (
        "action_not_eligible",
        "A return or an exchange of this order is open already.",
    )
    opened = opened_return(world.engine)
    assert opened is not None and opened.proposal_id == first.proposal_id


@pytest.mark.parametrize(
    ("order_id", "said"),
    [
        ("QH-1001", "back at the warehouse already"),
        ("QH-1008", "Custom-made and digital goods cannot be returned (RETURNS:p03)."),
        ("QH-1012", "outside the 30-day returns window (RETURNS:p02)"),
        ("QH-1006", "Only a delivered order can be returned (RETURNS:p02); this one is processing."),
    ],
)
def test_a_return_the_terms_do_not_allow_is_refused_and_nothing_opens(
    world: ActionWorld, order_id: str, said: str
) -> None:
    with pytest.raises(SupportError) as refused:
        world.preview(order_id, kind=RETURN)

    assert (refused.value.code, said in refused.value.message) == ("action_not_eligible", True)
    assert opened_return(world.engine, order_id) is None


def test_a_tenant_that_does_not_allow_returns_gets_none(world: ActionWorld) -> None:
    world.allow(kind=RETURN, rule=None)

    with pytest.raises(SupportError) as refused:
        world.preview(RETURNABLE, kind=RETURN)

    assert refused.value.code == "action_not_allowed"
