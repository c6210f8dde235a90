"""``exchange_items`` at the commerce service, on both databases: the catalogue's variants seeded, the
exchange opened once with the list-price difference due on check-in, nothing paid now, and an exchange the
terms or the catalogue do not allow refused before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from commerce_server.db import ActionProposalRow, ExchangeRow, ReturnRow
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ExchangeTerms
from contracts.errors import SupportError
from knowledge.action_rules import MERCHANT_STAFF_ONLY
from tests.commerce_server.support_actions import ActionWorld, action_world
from tests.conftest import DemoKeys

EXCHANGE = ActionKind.EXCHANGE_ITEMS
DESK = "QH-1004"
"""Alice's standard desk stand (DESK-01, listed CNY 149.00), delivered 2026-09-08, not back yet."""


@pytest.fixture
def world(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    allowed = action_world(commerce_engine, demo_keys, tmp_path)
    allowed.allow(kind=EXCHANGE, rule=ActionRule(reviewers=0))
    allowed.allow(kind=ActionKind.RETURN_ITEMS, rule=ActionRule(reviewers=0))
    return allowed


def test_an_exchange_for_the_large_stand_opens_once_with_the_difference_due_on_check_in(world: ActionWorld) -> None:
    proposal = world.preview(DESK, kind=EXCHANGE, sku_after="DESK-09")
    execution = world.execution(proposal, approval_tokens=())

    receipt = world.service().execute_action(execution)
    again = world.service().execute_action(execution)

    assert proposal.effect.exchange_opened == ExchangeTerms(
        sku_before="DESK-01", sku_after="DESK-09", units=1, difference_cents=2000
    )
    assert proposal.effect.policy_pages == ("EXCHANGES:p01", "EXCHANGES:p02")
    assert (receipt.kind, receipt.refund_cents, receipt.status_after, receipt.agreed_by) == (
        "exchange_items",
        0,
        "delivered",
        ("alice",),
    )
    assert (again.replay, again.receipt_id) == (True, receipt.receipt_id)
    assert world.order(DESK) == ("delivered", 2, 0, "issued")
    with Session(world.engine) as session:
        opened = session.get(ExchangeRow, DESK)
    assert opened is not None
    assert (opened.proposal_id, opened.sku_before, opened.sku_after, opened.difference_cents) == (
        proposal.proposal_id,
        "DESK-01",
        "DESK-09",
        2000,
    )


def test_an_open_exchange_stops_a_second_exchange_and_a_return(world: ActionWorld) -> None:
    first = world.preview(DESK, kind=EXCHANGE, sku_after="DESK-09")
    world.service().execute_action(world.execution(first, approval_tokens=()))

    for kind, extra in ((EXCHANGE, {"sku_after": "DESK-09"}), (ActionKind.RETURN_ITEMS, {})):
        with pytest.raises(SupportError) as refused:
            world.preview(DESK, kind=kind, **extra)
        assert (refused.value.code, refused.value.message) == (
            "action_not_eligible",
            "A return or an exchange of this order is open already.",
        )
    with Session(world.engine) as session:
        assert session.get(ReturnRow, DESK) is None


@pytest.mark.parametrize(
    ("order_id", "sku_after", "code", "said"),
    [
        (DESK, "LAMP-07", "action_not_eligible", "LAMP-07 is not another variant of the product on this order"),
        (DESK, "DESK-01", "action_not_eligible", "The order already holds DESK-01."),
        ("QH-1005", "CASE-06", "action_not_eligible", "Only a delivered order can be exchanged (EXCHANGES:p01)"),
        (DESK, None, "invalid_argument", "An exchange names the variant wanted (sku_after)."),
    ],
)
def test_an_exchange_the_terms_or_the_catalogue_do_not_allow_is_refused(
    world: ActionWorld, order_id: str, sku_after: str | None, code: str, said: str
) -> None:
    with pytest.raises(SupportError) as refused:
        world.preview(order_id, kind=EXCHANGE, sku_after=sku_after)

    assert (refused.value.code, said in refused.value.message) == (code, True), refused.value.message
    with Session(world.engine) as session:
        assert session.get(ExchangeRow, order_id) is None


def test_a_tenant_whose_terms_offer_no_exchange_gets_none_though_its_policy_allows_it(world: ActionWorld) -> None:
    world.allow(tenant="south", kind=EXCHANGE, rule=ActionRule(reviewers=0))

    with pytest.raises(SupportError) as refused:
        world.preview("QH-3004", subject="lin", kind=EXCHANGE, sku_after="DESK-09")

    assert (refused.value.code, refused.value.message) == ("action_not_eligible", MERCHANT_STAFF_ONLY)
    with Session(world.engine) as session:
        assert session.exec(select(ActionProposalRow)).first() is None
