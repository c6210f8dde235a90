"""The retail server's service on a small database in τ²-bench's format: identity scoping, writes as
proposals that change nothing, execution once with the customer's confirmation, and the policy's rules."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import ActionExecution
from contracts.credentials import COMMERCE_KID
from contracts.errors import CommerceErrorCode, SupportError
from contracts.retail import RETAIL_TENANT, RetailWrite
from keystore import create_demo_directory, directory_location, load_directory, load_private_key, private_key_path
from keystore.directory_edit import set_action
from keystore.directory_file import write_directory
from keystore.signers import KeyFileSigner
from retail_server.calculator import calculate
from retail_server.db import create_retail_schema
from retail_server.directory import enrol_retail
from retail_server.records import export_database, load_database
from retail_server.service import RetailService
from retail_server.tau2_format import RetailDatabase
from tests.conftest import postgres_schema_engine, sqlite_engine

ADDRESS = {"address1": "1 Elm St", "address2": "", "city": "Austin", "country": "USA", "state": "TX", "zip": "78701"}


def _database() -> RetailDatabase:
    variants = {
        "1000000001": {"item_id": "1000000001", "options": {"color": "red"}, "available": True, "price": 10.1},
        "1000000002": {"item_id": "1000000002", "options": {"color": "blue"}, "available": True, "price": 12.25},
        "1000000003": {"item_id": "1000000003", "options": {"color": "green"}, "available": False, "price": 9.0},
    }
    other = {"2000000001": {"item_id": "2000000001", "options": {"size": "L"}, "available": True, "price": 5.5}}

    def order(order_id: str, user: str, status: str, method: str, amount: float) -> dict[str, object]:
        item = {
            "name": "Mug",
            "product_id": "0000000001",
            "item_id": "1000000001",
            "price": 10.1,
            "options": {"color": "red"},
        }
        return {
            "order_id": order_id,
            "user_id": user,
            "address": ADDRESS,
            "items": [item, dict(item)],
            "status": status,
            "fulfillments": [],
            "payment_history": [{"transaction_type": "payment", "amount": amount, "payment_method_id": method}],
        }

    return RetailDatabase.model_validate(
        {
            "products": {
                "0000000001": {"name": "Mug", "product_id": "0000000001", "variants": variants},
                "0000000002": {"name": "Shirt", "product_id": "0000000002", "variants": other},
            },
            "users": {
                "ana_diaz_1": {
                    "user_id": "ana_diaz_1",
                    "name": {"first_name": "Ana", "last_name": "Diaz"},
                    "address": ADDRESS,
                    "email": "ana@example.com",
                    "orders": ["#W0000001", "#W0000002"],
                    "payment_methods": {
                        "gift_card_0000001": {"source": "gift_card", "id": "gift_card_0000001", "balance": 3.0},
                        "credit_card_0000001": {
                            "source": "credit_card",
                            "id": "credit_card_0000001",
                            "brand": "visa",
                            "last_four": "4242",
                        },
                    },
                },
                "bo_chen_2": {
                    "user_id": "bo_chen_2",
                    "name": {"first_name": "Bo", "last_name": "Chen"},
                    "address": ADDRESS,
                    "email": "bo@example.com",
                    "orders": ["#W0000003"],
                    "payment_methods": {"paypal_0000002": {"source": "paypal", "id": "paypal_0000002"}},
                },
            },
            "orders": {
                "#W0000001": order("#W0000001", "ana_diaz_1", "pending", "gift_card_0000001", 20.2),
                "#W0000002": order("#W0000002", "ana_diaz_1", "delivered", "credit_card_0000001", 20.2),
                "#W0000003": order("#W0000003", "bo_chen_2", "pending", "paypal_0000002", 20.2),
            },
        }
    )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def retail_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Engine, Path]]:
    """The small domain loaded once on SQLite and once on PostgreSQL, with a directory enrolling its
    customers as tenant retail's and the demo keys."""
    create_demo_directory(tmp_path)
    location = Path(directory_location(tmp_path, {}))
    write_directory(location, enrol_retail(load_directory(str(location)), [("ana_diaz_1", "Ana"), ("bo_chen_2", "Bo")]))
    opened = sqlite_engine(tmp_path) if request.param == "sqlite" else postgres_schema_engine()
    with opened as engine:
        create_retail_schema(engine)
        load_database(engine, _database())
        yield engine, tmp_path


def _service(retail_db: tuple[Engine, Path], customer: str = "ana_diaz_1") -> RetailService:
    engine, state = retail_db
    directory = load_directory(directory_location(state, {}))
    return RetailService(
        engine,
        directory.identity(customer),
        case_id="case-retail-1",
        directory=lambda: load_directory(directory_location(state, {})),
        signing_key=lambda: load_private_key(private_key_path(state, COMMERCE_KID)),
        now=lambda: datetime.now(UTC),
    )


def _refused(code: CommerceErrorCode, call: object) -> SupportError:
    with pytest.raises(SupportError) as refused:
        call()  # type: ignore[operator]
    assert refused.value.code == code, refused.value.message
    return refused.value


def test_the_database_exports_as_it_was_loaded(retail_db: tuple[Engine, Path]) -> None:
    assert export_database(retail_db[0]) == _database()


def test_reads_answer_for_the_signed_in_customer_only(retail_db: tuple[Engine, Path]) -> None:
    ana = _service(retail_db)
    assert ana.find_user_id_by_email("ANA@example.com") == "ana_diaz_1"
    assert ana.find_user_id_by_name_zip("ana", "diaz", "78701") == "ana_diaz_1"
    _refused(CommerceErrorCode.CUSTOMER_NOT_FOUND, lambda: ana.find_user_id_by_email("bo@example.com"))
    _refused(CommerceErrorCode.CUSTOMER_NOT_FOUND, lambda: ana.find_user_id_by_name_zip("Bo", "Chen", "78701"))
    _refused(CommerceErrorCode.CUSTOMER_NOT_FOUND, lambda: ana.get_user_details("bo_chen_2"))
    _refused(CommerceErrorCode.ORDER_NOT_ACCESSIBLE, lambda: ana.get_order_details("#W0000003"))
    assert ana.get_order_details("#W0000001").payment_history[0].amount == 20.2
    _refused(
        CommerceErrorCode.ORDER_NOT_ACCESSIBLE,
        lambda: ana.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": "#W0000003", "reason": "no longer needed"}),
    )


def test_a_cancellation_is_a_proposal_until_the_customer_confirms_it_once(retail_db: tuple[Engine, Path]) -> None:
    ana = _service(retail_db)
    before = export_database(retail_db[0])
    proposal = ana.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": "#W0000001", "reason": "ordered by mistake"})
    assert export_database(retail_db[0]) == before, "a proposal changes nothing"
    assert proposal.effect.refund_cents == 2020
    assert [(b.before_cents, b.after_cents) for b in proposal.effect.balance_changes] == [(300, 2320)]
    assert proposal.requires.customer and proposal.requires.reviewers == 0
    unconfirmed = ActionExecution(proposal_id=proposal.proposal_id, digest=proposal.digest, idempotency_key="k-1")
    _refused(CommerceErrorCode.CONFIRMATION_REQUIRED, lambda: ana.execute(unconfirmed))
    token = KeyFileSigner(retail_db[1]).confirmation_token(
        load_directory(directory_location(retail_db[1], {})).identity("ana_diaz_1"),
        case_id="case-retail-1",
        digest=proposal.digest,
    )
    confirmed = unconfirmed.model_copy(update={"confirmation_token": token})
    receipt = ana.execute(confirmed)
    assert receipt.refund_cents == 2020 and receipt.agreed_by == ("ana_diaz_1",) and not receipt.replay
    after = export_database(retail_db[0])
    assert after.orders["#W0000001"].status == "cancelled"
    assert after.users["ana_diaz_1"].payment_methods["gift_card_0000001"].balance == 23.2
    again = ana.execute(confirmed)
    assert again.replay and again.receipt_id == receipt.receipt_id
    assert export_database(retail_db[0]) == after, "a replay executes nothing"
    other_key = confirmed.model_copy(update={"idempotency_key": "k-2"})
    _refused(CommerceErrorCode.IDEMPOTENCY_CONFLICT, lambda: ana.execute(other_key))


def test_the_policy_rules_refuse_with_the_policy_sentence(retail_db: tuple[Engine, Path]) -> None:
    ana = _service(retail_db)
    refusal = _refused(
        CommerceErrorCode.ACTION_NOT_ELIGIBLE,
        lambda: ana.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": "#W0000001", "reason": "found it cheaper"}),
    )
    assert "Other reasons are not acceptable" in refusal.message
    _refused(
        CommerceErrorCode.ACTION_NOT_ELIGIBLE,
        lambda: ana.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": "#W0000002", "reason": "no longer needed"}),
    )
    swap = {"order_id": "#W0000001", "item_ids": ["1000000001"], "payment_method_id": "credit_card_0000001"}
    for new_item, rule_words in (
        ("2000000001", "same product"),
        ("1000000003", "same product"),
        ("1000000001", "same product"),
    ):
        refusal = _refused(
            CommerceErrorCode.ACTION_NOT_ELIGIBLE,
            lambda new_item=new_item: ana.propose(
                RetailWrite.MODIFY_PENDING_ORDER_ITEMS, {**swap, "new_item_ids": [new_item]}
            ),
        )
        assert rule_words in refusal.message
    _refused(
        CommerceErrorCode.ACTION_NOT_ELIGIBLE,
        lambda: ana.propose(
            RetailWrite.RETURN_DELIVERED_ORDER_ITEMS,
            {"order_id": "#W0000002", "item_ids": ["1000000001"], "payment_method_id": "paypal_0000002"},
        ),
    )
    gift = {**swap, "new_item_ids": ["1000000002"], "payment_method_id": "gift_card_0000001"}
    refusal = _refused(
        CommerceErrorCode.ACTION_NOT_ELIGIBLE,
        lambda: ana.propose(
            RetailWrite.MODIFY_PENDING_ORDER_ITEMS,
            {**gift, "item_ids": ["1000000001", "1000000001"], "new_item_ids": ["1000000002", "1000000002"]},
        ),
    )
    assert "enough balance" in refusal.message
    two = ana.propose(
        RetailWrite.MODIFY_PENDING_ORDER_ITEMS,
        {**swap, "item_ids": ["1000000001", "1000000001"], "new_item_ids": ["1000000002", "1000000002"]},
    )
    assert two.effect.charge_cents == 2 * (1225 - 1010)
    assert [change.position for change in two.effect.item_changes] == [0, 1]


def test_calculate_evaluates_arithmetic_only() -> None:
    assert calculate("(2 + 3) * 4 / 3") == "6.67"
    for hostile in ("__import__('os')", "2 ** 99999", "1/0", "(" * 300):
        with pytest.raises(SupportError) as refused:
            calculate(hostile)
        assert refused.value.code == CommerceErrorCode.INVALID_ARGUMENT


def _confirmed(retail_db: tuple[Engine, Path], proposal_digest: str, proposal_id: str, key: str) -> ActionExecution:
    token = KeyFileSigner(retail_db[1]).confirmation_token(
        load_directory(directory_location(retail_db[1], {})).identity("ana_diaz_1"),
        case_id="case-retail-1",
        digest=proposal_digest,
    )
    return ActionExecution(
        proposal_id=proposal_id, digest=proposal_digest, idempotency_key=key, confirmation_token=token
    )


def test_two_confirmed_writes_of_one_order_racing_execute_one(retail_db: tuple[Engine, Path]) -> None:
    """A cancellation and an address change of the same pending order, both confirmed, executed at once
    from two servers: one executes, the other is refused (the order changed), over several rounds."""
    for round_ in range(4):
        order = "#W0000001"
        ana = _service(retail_db)
        if export_database(retail_db[0]).orders[order].status != "pending":
            break
        address: dict[str, object] = {**ADDRESS, "address1": f"{round_} Oak Ave", "order_id": order}
        cancel = ana.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": order, "reason": "no longer needed"})
        move = ana.propose(RetailWrite.MODIFY_PENDING_ORDER_ADDRESS, address)
        executions = [
            _confirmed(retail_db, cancel.digest, cancel.proposal_id, f"c-{round_}"),
            _confirmed(retail_db, move.digest, move.proposal_id, f"m-{round_}"),
        ]

        def run(execution: ActionExecution) -> str:
            try:
                _service(retail_db).execute(execution)
            except SupportError as refused:
                return refused.code
            return "executed"

        with ThreadPoolExecutor(max_workers=2) as pool:
            results = sorted(pool.map(run, executions))
        if results.count("executed") != 1:
            pytest.fail(f"round {round_}: {results}")
        assert results[0] in ("action_changed", "action_not_eligible"), results
        cancelled = export_database(retail_db[0]).orders[order].status == "cancelled"
        payments = export_database(retail_db[0]).orders[order].payment_history
        assert len(payments) == (2 if cancelled else 1), "a cancellation's refund was written once, or not at all"
        if cancelled:
            break


def test_the_tenants_caps_hold_at_the_proposal_and_the_execution(retail_db: tuple[Engine, Path]) -> None:
    location = Path(directory_location(retail_db[1], {}))
    directory = load_directory(str(location))
    once_a_day = ActionRule(customer_confirms=True, reviewers=0, max_per_customer_per_day=1)
    directory = set_action(directory, RETAIL_TENANT, ActionKind.CHANGE_ORDER_ADDRESS, once_a_day)
    little = ActionRule(customer_confirms=True, reviewers=0, max_cents_per_customer_per_30_days=1000)
    write_directory(location, set_action(directory, RETAIL_TENANT, ActionKind.CANCEL_ORDER, little))
    ana = _service(retail_db)
    refusal = _refused(
        CommerceErrorCode.ACTION_CAP_REACHED,
        lambda: ana.propose(RetailWrite.CANCEL_PENDING_ORDER, {"order_id": "#W0000001", "reason": "no longer needed"}),
    )
    assert "1000 cents of cancel_order per customer in 30 days" in refusal.message
    move = {**ADDRESS, "order_id": "#W0000001"}
    first = ana.propose(RetailWrite.MODIFY_PENDING_ORDER_ADDRESS, {**move, "address1": "2 Oak Ave"})
    second = ana.propose(RetailWrite.MODIFY_PENDING_ORDER_ADDRESS, {**move, "address1": "3 Oak Ave"})
    ana.execute(_confirmed(retail_db, first.digest, first.proposal_id, "a-1"))
    refusal = _refused(
        CommerceErrorCode.ACTION_CAP_REACHED,
        lambda: ana.execute(_confirmed(retail_db, second.digest, second.proposal_id, "a-2")),
    )
    assert "1 change_order_address a day per customer; 1 were made" in refusal.message
    assert export_database(retail_db[0]).orders["#W0000001"].address.address1 == "2 Oak Ave"


def test_the_policy_now_decides_at_the_execution(retail_db: tuple[Engine, Path]) -> None:
    """A proposal made under the tenant's rule is refused when the rule is withdrawn, or asks for a reviewer,
    by the time the customer's confirmation arrives."""
    location = Path(directory_location(retail_db[1], {}))
    ana = _service(retail_db)
    cancel: dict[str, object] = {"order_id": "#W0000001", "reason": "no longer needed"}
    proposal = ana.propose(RetailWrite.CANCEL_PENDING_ORDER, cancel)
    with_reviewer = ActionRule(customer_confirms=True, reviewers=1)
    write_directory(
        location, set_action(load_directory(str(location)), RETAIL_TENANT, ActionKind.CANCEL_ORDER, with_reviewer)
    )
    _refused(
        CommerceErrorCode.ACTION_CHANGED,
        lambda: ana.execute(_confirmed(retail_db, proposal.digest, proposal.proposal_id, "p-1")),
    )
    write_directory(location, set_action(load_directory(str(location)), RETAIL_TENANT, ActionKind.CANCEL_ORDER, None))
    _refused(
        CommerceErrorCode.ACTION_NOT_ALLOWED,
        lambda: ana.execute(_confirmed(retail_db, proposal.digest, proposal.proposal_id, "p-2")),
    )
    _refused(CommerceErrorCode.ACTION_NOT_ALLOWED, lambda: ana.propose(RetailWrite.CANCEL_PENDING_ORDER, cancel))
    assert export_database(retail_db[0]).orders["#W0000001"].status == "pending"
