"""``change_default_address`` at the commerce service, on both databases: the signed-in customer's own
account changes once (no order moves), a repeat is a replay, another customer can neither change it nor
execute its proposal, a proposal made before another change is refused; and a database created when every
proposal named an order is upgraded in place, its rows and references kept."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, MetaData, inspect
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from commerce_server.db import (
    COMMERCE_TABLES,
    ActionExecutionRow,
    ActionProposalRow,
    CustomerAccountRow,
    ShippingAddressRow,
)
from commerce_server.seed import fixture_rows, load_fixture, seed_fixture
from contracts.action_credentials import verify_action_receipt
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionProposal, ActionRequest, Address
from contracts.credentials import key_set
from contracts.errors import SupportError
from tests.case_data import DEFAULT_ADDRESSES
from tests.commerce_server.support_actions import ActionWorld, action_world
from tests.conftest import DemoKeys, postgres_schema_engine, sqlite_engine

DEFAULT = ActionKind.CHANGE_DEFAULT_ADDRESS
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
HOME = DEFAULT_ADDRESSES["alice"]
NEW_FLAT = HOME.model_copy(update={"line1": "9 Lotus Court", "postcode": "310012"})


@pytest.fixture
def world(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    allowed = action_world(commerce_engine, demo_keys, tmp_path)
    allowed.allow(kind=DEFAULT, rule=ActionRule(reviewers=0))
    return allowed


def proposed(world: ActionWorld, address: Address = NEW_FLAT, subject: str = "alice") -> ActionProposal:
    request = ActionRequest(kind=DEFAULT, case_id=f"case-account-{subject}", address=address)
    return world.service(subject).preview_action(request)


def account(engine: Engine, customer: str = "alice") -> tuple[Address, int]:
    with Session(engine) as session:
        row = session.get(CustomerAccountRow, ("qinghe", customer))
        assert row is not None
        fields = row.model_dump()
        return Address.model_validate({name: fields[name] for name in Address.model_fields}), row.version


def order_addresses(engine: Engine) -> dict[str, str]:
    with Session(engine) as session:
        return {row.order_id: row.line1 for row in session.exec(select(ShippingAddressRow))}


def test_an_agreed_default_address_change_moves_the_account_once_and_no_order(world: ActionWorld) -> None:
    orders_before = order_addresses(world.engine)
    proposal = proposed(world)
    execution = world.execution(proposal, approval_tokens=())

    receipt = world.service().execute_action(execution)
    again = world.service().execute_action(execution)

    effect = proposal.effect
    assert (effect.address_before, effect.address_after, effect.account_version, effect.order_id) == (
        HOME,
        NEW_FLAT,
        1,
        None,
    )
    assert (receipt.kind, receipt.order_id, receipt.account_version_after, receipt.agreed_by) == (
        "change_default_address",
        None,
        2,
        ("alice",),
    )
    claims = verify_action_receipt(receipt.signature, key_set(world.keys().directory()))
    assert (claims.order_id, claims.account_version_before, claims.account_version_after) == (None, 1, 2)
    assert (again.replay, again.receipt_id) == (True, receipt.receipt_id)
    assert account(world.engine) == (NEW_FLAT, 2)
    assert order_addresses(world.engine) == orders_before
    with Session(world.engine) as session:
        stored = session.get(ActionProposalRow, proposal.proposal_id)
        assert stored is not None and stored.order_id is None


def test_each_customer_changes_only_their_own_account(world: ActionWorld) -> None:
    bobs = proposed(world, subject="bob")
    alices = proposed(world)

    with pytest.raises(SupportError) as refused:
        world.service("bob").execute_action(world.execution(alices, approval_tokens=()))

    assert refused.value.code == "proposal_not_accessible"
    assert bobs.customer == "bob" and bobs.effect.address_before is not None
    assert bobs.effect.address_before.recipient == "Bob Li (fictional)"
    assert account(world.engine) == (HOME, 1)


def test_the_accounts_current_address_is_refused_before_anything_is_stored(world: ActionWorld) -> None:
    with pytest.raises(SupportError) as refused:
        proposed(world, address=HOME)

    assert (refused.value.code, refused.value.message) == (
        "action_not_eligible",
        "This is the account's default delivery address already.",
    )
    with Session(world.engine) as session:
        assert session.exec(select(ActionProposalRow)).first() is None


def test_a_proposal_made_before_another_change_is_a_changed_action(world: ActionWorld) -> None:
    first = proposed(world)
    second = proposed(world, address=NEW_FLAT.model_copy(update={"city": "Ningbo"}))
    world.service().execute_action(world.execution(first, approval_tokens=()))

    with pytest.raises(SupportError) as refused:
        world.service().execute_action(world.execution(second, key="key-2", approval_tokens=()))

    assert refused.value.code == "action_changed"
    assert account(world.engine) == (NEW_FLAT, 2)
    with Session(world.engine) as session:
        assert session.get(ActionExecutionRow, second.proposal_id) is None


def test_a_tenant_that_does_not_allow_it_changes_nothing(world: ActionWorld) -> None:
    world.allow(kind=DEFAULT, rule=None)

    with pytest.raises(SupportError) as refused:
        proposed(world)

    assert refused.value.code == "action_not_allowed"


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_database_from_when_every_proposal_named_an_order_is_upgraded_in_place(database: str, tmp_path: Path) -> None:
    opened = sqlite_engine(tmp_path) if database == "sqlite" else postgres_schema_engine()
    with opened as engine:
        earlier = MetaData()
        for table in COMMERCE_TABLES:
            table.to_metadata(earlier)
        earlier.tables["action_proposals"].c.order_id.nullable = False  # as release 0.11 declared it
        earlier.create_all(engine)
        rows = fixture_rows(load_fixture())
        with Session(engine) as session:
            for name in ("products", "orders"):
                session.add_all(rows[name])
                session.commit()
            session.add(
                ActionProposalRow(
                    proposal_id="AP-" + "1" * 24,
                    tenant="qinghe",
                    customer="alice",
                    case_id="case-earlier",
                    kind="cancel_order",
                    order_id="QH-1006",
                    digest="0" * 64,
                    body="{}",
                    created_at=NOW,
                )
            )
            session.commit()
        assert not _order_id_nullable(engine)

        seed_fixture(engine)
        seed_fixture(engine)  # a second start finds nothing left to upgrade

        assert _order_id_nullable(engine)
        with Session(engine) as session:
            kept = session.get(ActionProposalRow, "AP-" + "1" * 24)
            assert kept is not None and (kept.order_id, kept.case_id) == ("QH-1006", "case-earlier")
            session.add(_execution_of("AP-" + "1" * 24))
            session.commit()
            assert session.get(CustomerAccountRow, ("qinghe", "alice")) is not None
            session.add(_execution_of("AP-" + "2" * 24))
            with pytest.raises(IntegrityError):  # the executions still reference the (rebuilt) proposals
                session.commit()


def _order_id_nullable(engine: Engine) -> bool:
    columns = {column["name"]: column for column in inspect(engine).get_columns("action_proposals")}
    return bool(columns["order_id"]["nullable"])


def _execution_of(proposal_id: str) -> ActionExecutionRow:
    return ActionExecutionRow(
        proposal_id=proposal_id,
        tenant="qinghe",
        customer="alice",
        kind="cancel_order",
        idempotency_key=f"key-{proposal_id}",
        body_digest="0" * 64,
        state="in_flight",
        claimed_at=NOW,
    )
