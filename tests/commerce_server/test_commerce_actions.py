"""preview_action and execute_action at the commerce service, on both databases: the exact effect from
the records, default deny, everyone's agreement, expiry, the caps, and idempotency as ACP §6 states it.
The conformance kit drives the same contract through the MCP SDK (tests/commerce_contract)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from threading import Barrier

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import Engine, func, select, update
from sqlmodel import Session

from commerce_server.action_execution import ActionExecutor
from commerce_server.action_records import IN_FLIGHT_LEASE
from commerce_server.db import ActionExecutionRow, ActionProposalRow, OrderRow, ShippingAddressRow
from contracts.action_credentials import verify_action_receipt
from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionExecution, Address
from contracts.case import Decision
from contracts.commerce import OrderStatus
from contracts.credentials import SETTLE_WINDOW, key_set
from contracts.errors import ErrorClass, SupportError
from keystore import demo_identity
from tests.commerce_server.support_actions import SECOND_PROCESSING_ORDER, ActionWorld, action_world
from tests.conftest import DemoKeys


@pytest.fixture
def world(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> ActionWorld:
    allowed = action_world(commerce_engine, demo_keys, tmp_path)
    allowed.allow()
    return allowed


def refusal(call: Callable[[], object]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        call()
    return caught.value


def count(engine: Engine, table: type) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar_one()


def executor(world: ActionWorld, session: Session, now: datetime) -> ActionExecutor:
    service = world.service()
    return ActionExecutor(
        session,
        demo_identity("alice"),
        keys=world.keys(),
        ledger_id=service.ledger_id,
        read_order=service._read_order,
        now=now,
    )


def test_the_preview_states_the_exact_effect_from_the_records_and_changes_nothing(world: ActionWorld) -> None:
    proposal = world.preview()

    effect = proposal.effect
    assert (effect.order_id, effect.status_before, effect.status_after) == ("QH-1006", "processing", "cancelled")
    assert (effect.refund_cents, effect.invoice_void, effect.policy_pages) == (
        4700,
        True,
        ("DELIVERY:p01", "INVOICES:p02"),
    )
    assert (proposal.requires.customer, proposal.requires.reviewers, proposal.rule) == (True, 1, ActionRule())
    assert proposal.computed_digest() == proposal.digest
    assert proposal.expires_at - proposal.created_at == timedelta(minutes=30)
    assert world.order() == ("processing", 1, 0, "issued")


def test_an_action_the_policy_does_not_name_is_neither_previewed_nor_executed(world: ActionWorld) -> None:
    proposal = world.preview()
    world.allow(rule=None)

    preview = refusal(lambda: world.preview())
    execute = refusal(lambda: world.service().execute_action(world.execution(proposal)))

    assert (preview.code, preview.error_class) == ("action_not_allowed", ErrorClass.AUTHORIZATION)
    assert execute.code == "action_not_allowed"
    assert count(world.engine, ActionProposalRow) == 1 and count(world.engine, ActionExecutionRow) == 0
    assert world.order() == ("processing", 1, 0, "issued")


def test_an_agreed_action_executes_once_and_a_repeat_is_a_replay(world: ActionWorld) -> None:
    proposal = world.preview()
    execution = world.execution(proposal)

    receipt = world.service().execute_action(execution)
    replay = world.service().execute_action(execution)

    assert (receipt.status_after, receipt.refund_cents, receipt.agreed_by, receipt.replay) == (
        OrderStatus.CANCELLED,
        4700,
        ("alice", "chen"),
        False,
    )
    assert replay == receipt.model_copy(update={"replay": True})
    assert world.order() == ("cancelled", 2, 4700, "void")
    claims = verify_action_receipt(receipt.signature, key_set(world.keys().directory()))
    assert (claims.proposal_id, claims.digest, claims.order_version_before, claims.agreed_by) == (
        proposal.proposal_id,
        proposal.digest,
        1,
        ["alice", "chen"],
    )


def test_the_same_proposal_or_key_with_another_body_is_a_conflict(world: ActionWorld) -> None:
    proposal = world.preview()
    world.service().execute_action(world.execution(proposal, key="key-1"))

    other_key = refusal(lambda: world.service().execute_action(world.execution(proposal, key="key-2")))
    other_body = refusal(lambda: world.service().execute_action(world.execution(proposal, key="key-1")))

    assert other_key.code == other_body.code == "idempotency_conflict"
    assert world.order() == ("cancelled", 2, 4700, "void")


def test_a_refusal_is_not_cached_and_the_corrected_request_executes(world: ActionWorld) -> None:
    proposal = world.preview()
    unconfirmed = world.execution(proposal, confirmation_token=None)

    first = refusal(lambda: world.service().execute_action(unconfirmed))
    receipt = world.service().execute_action(world.execution(proposal))

    assert first.code == "confirmation_required"
    assert receipt.replay is False and world.order()[0] == "cancelled"


def test_a_twin_in_flight_is_asked_to_retry_and_an_abandoned_claim_is_taken_over(world: ActionWorld) -> None:
    proposal = world.preview()
    execution = world.execution(proposal)
    now = datetime.now(UTC)
    with Session(world.engine) as session:
        session.add(
            ActionExecutionRow(
                proposal_id=proposal.proposal_id,
                tenant="qinghe",
                customer="alice",
                kind="cancel_order",
                idempotency_key=execution.idempotency_key,
                body_digest=execution.body_digest(),
                state="in_flight",
                claimed_at=now,
            )
        )
        session.commit()

    busy = refusal(lambda: world.service().execute_action(execution))
    with Session(world.engine) as session:
        abandoned = executor(world, session, now + IN_FLIGHT_LEASE + timedelta(seconds=1)).execute(
            execution, token_case=None
        )

    assert (busy.code, busy.error_class, busy.retry_after_seconds) == ("request_in_flight", ErrorClass.TRANSIENT, 1.0)
    assert abandoned.replay is False and world.order()[0] == "cancelled"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ("digest", "action_changed"),
        ("order", "action_changed"),
        ("rule", "action_changed"),
        ("another_customer_confirms", "confirmation_invalid"),
        ("confirmation_of_another_digest", "confirmation_invalid"),
        ("reviewer_of_another_tenant", "approval_invalid"),
        ("a_rejection", "approval_invalid"),
        ("no_approval", "approval_signature_required"),
    ],
)
def test_a_changed_or_wrongly_agreed_action_is_refused_and_changes_nothing(
    world: ActionWorld, change: str, code: str
) -> None:
    proposal = world.preview()
    execution = world.execution(proposal)
    if change == "digest":
        execution = execution.model_copy(update={"digest": "0" * 64})
    elif change == "order":
        with Session(world.engine) as session:
            session.exec(update(OrderRow).where(OrderRow.order_id == "QH-1006").values(version=7))  # type: ignore[arg-type]
            session.commit()
    elif change == "rule":
        world.allow(rule=ActionRule(reviewers=2))
    elif change == "another_customer_confirms":
        execution = world.execution(proposal, **world.agreement(proposal, customer="bob"))
    elif change == "confirmation_of_another_digest":
        execution = world.execution(
            proposal, confirmation_token=world.agreement(proposal, digest="1" * 64)["confirmation_token"]
        )
    elif change == "reviewer_of_another_tenant":
        execution = world.execution(
            proposal, approval_tokens=world.agreement(proposal, reviewers=("mei",))["approval_tokens"]
        )
    elif change == "a_rejection":
        rejection = world.agreement(proposal, decision=Decision.REJECT)["approval_tokens"]
        execution = world.execution(proposal, approval_tokens=rejection)
    elif change == "no_approval":
        execution = world.execution(proposal, approval_tokens=())
    before = world.order()

    refused = refusal(lambda: world.service().execute_action(execution))

    assert refused.code == code, refused
    assert world.order() == before and before[0] == "processing"
    assert count(world.engine, ActionExecutionRow) == 0


def test_another_customers_proposal_reads_as_a_missing_one(world: ActionWorld) -> None:
    proposal = world.preview()
    bob = world.service("bob")

    foreign = refusal(lambda: bob.execute_action(world.execution(proposal)))
    missing = refusal(
        lambda: bob.execute_action(world.execution(proposal).model_copy(update={"proposal_id": "AP-" + "0" * 24}))
    )

    assert (
        (foreign.code, foreign.message)
        == (missing.code, missing.message)
        == ("proposal_not_accessible", "No such proposal is accessible to this customer and case.")
    )


def test_an_expired_proposal_executes_nothing(world: ActionWorld) -> None:
    proposal = world.preview(expires_in_seconds=60)
    late = world.execution(proposal, **world.agreement(proposal, signed_at=proposal.expires_at + timedelta(seconds=1)))
    timely = world.execution(proposal, key="key-2")

    with Session(world.engine) as session:
        signed_late = refusal(
            lambda: executor(world, session, proposal.expires_at + timedelta(seconds=2)).execute(late, token_case=None)
        )
    with Session(world.engine) as session:
        too_late = refusal(
            lambda: executor(world, session, datetime.now(UTC) + SETTLE_WINDOW + timedelta(seconds=5)).execute(
                timely, token_case=None
            )
        )

    assert signed_late.code == "proposal_expired"
    # The confirmation holds as long as the settle window: past it, the customer must confirm again.
    assert (too_late.code, "token_expired" in too_late.message) == ("confirmation_invalid", True)
    assert world.order() == ("processing", 1, 0, "issued")


def test_an_action_nobody_agrees_to_runs_before_expiry_only(world: ActionWorld) -> None:
    world.allow(rule=ActionRule(customer_confirms=False, reviewers=0, max_per_customer_per_day=3))
    proposal = world.preview()
    bare = ActionExecution(proposal_id=proposal.proposal_id, digest=proposal.digest, idempotency_key="auto")

    with Session(world.engine) as session:
        expired = refusal(lambda: executor(world, session, proposal.expires_at).execute(bare, token_case=None))
    receipt = world.service().execute_action(bare)

    assert expired.code == "proposal_expired"
    assert receipt.agreed_by == () and world.order()[0] == "cancelled"


def test_the_daily_cap_refuses_the_next_action_at_preview_and_at_execution(world: ActionWorld) -> None:
    world.add_processing_order()
    world.allow(rule=ActionRule(max_per_customer_per_day=1))
    first, second = world.preview(), world.preview(SECOND_PROCESSING_ORDER)

    world.service().execute_action(world.execution(first))
    at_execution = refusal(lambda: world.service().execute_action(world.execution(second, key="key-2")))
    at_preview = refusal(lambda: world.preview(SECOND_PROCESSING_ORDER))

    assert at_execution.code == at_preview.code == "action_cap_reached"
    assert "1 cancel_order a day per customer; 1 were made in the last 24 hours" in at_preview.message
    assert world.order(SECOND_PROCESSING_ORDER)[0] == "processing"


def test_the_running_total_refuses_an_action_that_would_pass_it(world: ActionWorld) -> None:
    world.add_processing_order()
    world.allow(rule=ActionRule(max_cents_per_customer_per_30_days=9000))

    world.service().execute_action(world.execution(world.preview()))
    refused = refusal(lambda: world.preview(SECOND_PROCESSING_ORDER))

    assert refused.code == "action_cap_reached"
    assert "9000 cents of cancel_order per customer in 30 days; 4700 were moved already" in refused.message


def test_a_shipped_order_cannot_be_cancelled(world: ActionWorld) -> None:
    refused = refusal(lambda: world.preview("QH-1005"))

    assert refused.code == "action_not_eligible"
    assert "(DELIVERY p01); this one is shipped" in refused.message


NEW_ADDRESS = Address(
    recipient="Alice Wang (fictional)",
    phone="+86 21 5555 0199",
    line1="3 Lotus Court",
    city="Ningbo",
    postcode="315000",
    country="CN",
)


def test_an_address_change_moves_the_address_once_and_nothing_else(world: ActionWorld) -> None:
    world.allow(kind=ActionKind.CHANGE_ORDER_ADDRESS)
    before = world.address()
    proposal = world.preview(kind=ActionKind.CHANGE_ORDER_ADDRESS, address=NEW_ADDRESS)

    receipt = world.service().execute_action(world.execution(proposal))

    assert before is not None and before.city == "Hangzhou"
    assert (proposal.effect.address_before, proposal.effect.address_after) == (before, NEW_ADDRESS)
    assert (proposal.effect.refund_cents, proposal.effect.status_after, proposal.effect.policy_pages) == (
        0,
        OrderStatus.PROCESSING,
        ("DELIVERY:p01", "DELIVERY:p03"),
    )
    assert (receipt.status_after, receipt.refund_cents, receipt.order_version_after) == ("processing", 0, 2)
    assert world.address() == NEW_ADDRESS
    assert world.order() == ("processing", 2, 0, "issued")


@pytest.mark.parametrize(
    ("order_id", "address", "code", "said"),
    [
        ("QH-1005", NEW_ADDRESS, "action_not_eligible", "only be changed before the order ships (DELIVERY p03)"),
        ("QH-1006", None, "invalid_argument", "An address change names the new address."),
    ],
)
def test_an_address_change_after_shipping_or_without_an_address_is_refused(
    world: ActionWorld, order_id: str, address: Address | None, code: str, said: str
) -> None:
    world.allow(kind=ActionKind.CHANGE_ORDER_ADDRESS)

    refused = refusal(lambda: world.preview(order_id, kind=ActionKind.CHANGE_ORDER_ADDRESS, address=address))

    assert (refused.code, said in refused.message) == (code, True)


def test_an_address_change_to_the_same_address_is_refused(world: ActionWorld) -> None:
    world.allow(kind=ActionKind.CHANGE_ORDER_ADDRESS)

    refused = refusal(lambda: world.preview(kind=ActionKind.CHANGE_ORDER_ADDRESS, address=world.address()))

    assert (refused.code, refused.message) == ("action_not_eligible", "The order is already going to this address.")


def test_an_address_moved_since_the_proposal_is_a_changed_action(world: ActionWorld) -> None:
    world.allow(kind=ActionKind.CHANGE_ORDER_ADDRESS)
    proposal = world.preview(kind=ActionKind.CHANGE_ORDER_ADDRESS, address=NEW_ADDRESS)
    with Session(world.engine) as session:
        row = session.get(ShippingAddressRow, "QH-1006")
        assert row is not None
        row.city = "Shaoxing"
        session.add(row)
        session.commit()

    refused = refusal(lambda: world.service().execute_action(world.execution(proposal)))

    assert refused.code == "action_changed"
    assert world.address() is not None and world.address() != NEW_ADDRESS


def test_executions_and_refusals_are_counted_and_a_replay_is_not(world: ActionWorld) -> None:
    executed = {"tenant": "qinghe", "kind": "cancel_order"}
    refused = {"tool": "execute_action", "code": "confirmation_required"}

    def sample(name: str, labels: dict[str, str]) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = sample("commerce_actions_executed_total", executed), sample("commerce_action_refusals_total", refused)
    proposal = world.preview()
    refusal(lambda: world.service().execute_action(world.execution(proposal, confirmation_token=None)))
    execution = world.execution(proposal)
    world.service().execute_action(execution)
    world.service().execute_action(execution)
    after = sample("commerce_actions_executed_total", executed), sample("commerce_action_refusals_total", refused)

    assert (after[0] - before[0], after[1] - before[1]) == (1.0, 1.0)


def test_concurrent_twins_execute_once_and_every_other_answer_is_a_replay_or_in_flight(world: ActionWorld) -> None:
    proposal = world.preview()
    execution = world.execution(proposal)
    start = Barrier(8)

    def execute(_: int) -> str:
        service = world.service()
        start.wait()
        try:
            return "replay" if service.execute_action(execution).replay else "executed"
        except SupportError as refused:
            return refused.code

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(execute, range(8)))
    settled = world.service().execute_action(execution)

    assert answers.count("executed") == 1, answers
    assert set(answers) <= {"executed", "replay", "request_in_flight"}, answers
    assert settled.replay is True
    assert world.order() == ("cancelled", 2, 4700, "void")
    assert count(world.engine, ActionExecutionRow) == 1


def test_competing_proposals_of_one_order_execute_once(world: ActionWorld) -> None:
    proposals = [world.preview() for _ in range(4)]
    executions = [world.execution(proposal, key=f"key-{number}") for number, proposal in enumerate(proposals)]
    start = Barrier(len(executions))

    def execute(execution: ActionExecution) -> str:
        service = world.service()
        start.wait()
        try:
            service.execute_action(execution)
        except SupportError as refused:
            return refused.code
        return "executed"

    with ThreadPoolExecutor(max_workers=len(executions)) as pool:
        answers = list(pool.map(execute, executions))

    assert answers.count("executed") == 1, answers
    assert set(answers) - {"executed"} <= {"action_changed", "action_not_eligible"}, answers
    assert world.order() == ("cancelled", 2, 4700, "void")


def test_each_tenant_answers_to_its_own_rule(commerce_engine: Engine, demo_keys: DemoKeys, tmp_path: Path) -> None:
    """south lets its customers cancel with their own confirmation alone (at most one a day); qinghe
    allows nothing. lin's cancellation needs no reviewer, and alice's is denied."""
    south = action_world(commerce_engine, demo_keys, tmp_path)
    south.allow("south", ActionRule(reviewers=0, max_per_customer_per_day=1))
    proposal = south.preview("QH-3006", subject="lin")
    confirmed = south.agreement(proposal, customer="lin", reviewers=())

    receipt = south.service("lin").execute_action(
        ActionExecution(proposal_id=proposal.proposal_id, digest=proposal.digest, idempotency_key="lin-1", **confirmed)
    )
    denied = refusal(lambda: south.preview("QH-1006"))

    assert (proposal.requires.customer, proposal.requires.reviewers) == (True, 0)
    assert (receipt.agreed_by, receipt.refund_cents) == (("lin",), 4700)
    assert south.order("QH-3006")[0] == "cancelled"
    assert denied.code == "action_not_allowed"
