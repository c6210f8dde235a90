"""The commerce server pays only on a reviewer's signed approval, verified with its own public keys,
once per token id, and signs every receipt (in-process, on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from pathlib import Path
from threading import Barrier

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import Session
from sqlmodel import select as sqlmodel_select

from commerce_server import refunds
from commerce_server.db import ApprovalUseRow, RefundRow
from commerce_server.keys import CommerceKeys
from commerce_server.receipts import receipt_claims
from commerce_server.service import CommerceService
from contracts.commerce import RefundApproval
from contracts.credentials import verify_approval_token, verify_receipt
from contracts.errors import AuthorizationError, ConfigurationError, SupportError, error_from_code
from keystore import demo_identity
from tests.commerce_server.forgeries import ATTACKS, signed_19s_before_expiry
from tests.conftest import DemoKeys

MakeApproval = Callable[..., RefundApproval]


@pytest.fixture
def alice(commerce_engine: Engine) -> CommerceService:
    return CommerceService(commerce_engine, demo_identity("alice"))


def count(engine: Engine, table: type) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar_one()


def refusal(call: Callable[[], object]) -> SupportError:
    with pytest.raises(SupportError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("attack", ATTACKS)
def test_forged_or_misused_approvals_pay_nothing(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys, attack: str
) -> None:
    expected = ATTACKS[attack]
    approval = expected.build(refund_approval(alice.get_order("QH-1001")), demo_keys)

    error = refusal(lambda: alice.execute_refund(approval))

    assert (error.code, type(error)) == (expected.code, type(error_from_code(expected.code, "")))
    assert expected.reason in error.message
    order = alice.get_order("QH-1001")
    assert (order.refunded_cents, order.version) == (0, 1)
    assert count(commerce_engine, RefundRow) == count(commerce_engine, ApprovalUseRow) == 0


def test_a_valid_approval_pays_once_with_a_signed_receipt(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    approval = refund_approval(alice.get_order("QH-1009"))
    assert approval.approval_token is not None
    token = verify_approval_token(approval.approval_token, demo_keys.directory())

    receipt = alice.execute_refund(approval)
    replay = alice.execute_refund(approval)

    assert replay == receipt and receipt.signature is not None
    claims = verify_receipt(receipt.signature, demo_keys.public_keys())
    assert claims.model_dump() == {
        "receipt_id": receipt.receipt_id,
        "approval_id": approval.approval_id,
        "approval_jti": token.jti,
        "case_id": approval.proposal.case_id,
        "order_id": "QH-1009",
        "digest": approval.digest,
        "amount_cents": 8000,
        "currency": "CNY",
        "order_version_before": 1,
        "order_version_after": 2,
        "refunded_cents_after": 12900,
        "iat": int(receipt.created_at.timestamp()),
        "exp": claims.exp,
        "jti": receipt.receipt_id,
    }
    assert claims.expires_at - claims.issued_at > timedelta(days=365 * 50)
    order = alice.get_order("QH-1009")
    assert (order.refunded_cents, order.version) == (12900, 2)
    assert count(commerce_engine, RefundRow) == count(commerce_engine, ApprovalUseRow) == 1
    with Session(commerce_engine) as session:
        use = session.get(ApprovalUseRow, token.jti)
        assert use is not None
        assert (use.approval_id, use.receipt_id) == (approval.approval_id, receipt.receipt_id)


def test_a_receipt_altered_after_signing_does_not_verify(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    receipt = alice.execute_refund(refund_approval(alice.get_order("QH-1001")))
    assert receipt.signature is not None
    header, _, signature = receipt.signature.split(".")
    other = alice.execute_refund(refund_approval(alice.get_order("QH-1002")))
    assert other.signature is not None

    with pytest.raises(AuthorizationError) as caught:
        verify_receipt(f"{header}.{other.signature.split('.')[1]}.{signature}", demo_keys.public_keys())

    assert caught.value.code == "bad_signature"


def test_a_token_id_pays_once_whatever_approval_id_it_comes_with(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    approval = refund_approval(alice.get_order("QH-1001"))
    alice.execute_refund(approval)
    again = approval.model_copy(update={"approval_id": "approval-second-use"})

    error = refusal(lambda: alice.execute_refund(again))

    assert isinstance(error, AuthorizationError) and error.code == "approval_reused"
    assert alice.get_order("QH-1001").refunded_cents == 12900
    assert count(commerce_engine, RefundRow) == 1


def test_concurrent_reuses_of_one_token_pay_once(commerce_engine: Engine, refund_approval: MakeApproval) -> None:
    approval = refund_approval(CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1002"))
    copies = [approval.model_copy(update={"approval_id": f"approval-copy-{n}"}) for n in range(6)]
    start = Barrier(len(copies))

    def execute(copy: RefundApproval) -> str:
        service = CommerceService(commerce_engine, demo_identity("alice"))
        start.wait()
        try:
            return service.execute_refund(copy).receipt_id
        except SupportError as error:
            return error.code

    with ThreadPoolExecutor(max_workers=len(copies)) as pool:
        outcomes = list(pool.map(execute, copies))

    assert sorted(outcome.startswith("SIM-") for outcome in outcomes) == [False] * 5 + [True]
    # A copy that lost the race saw the token consumed, the case paid, or the order already moved on.
    refused = {outcome for outcome in outcomes if not outcome.startswith("SIM-")}
    assert refused <= {"approval_reused", "case_already_paid", "quote_changed"}
    assert count(commerce_engine, RefundRow) == count(commerce_engine, ApprovalUseRow) == 1
    assert CommerceService(commerce_engine, demo_identity("alice")).get_order("QH-1002").refunded_cents == 17900


def test_an_approval_signed_19s_before_expiry_still_pays_after_it(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    approval = signed_19s_before_expiry(refund_approval(alice.get_order("QH-1001")), demo_keys)

    receipt = alice.execute_refund(approval)

    assert receipt.created_at > approval.proposal.expires_at
    assert receipt.amount_cents == 12900 and alice.execute_refund(approval) == receipt


def test_a_paid_approval_replays_its_receipt_after_the_settle_window(
    alice: CommerceService, refund_approval: MakeApproval, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that crashed after the commit and retries late pays nothing and gets its receipt."""
    approval = refund_approval(alice.get_order("QH-1001"))
    receipt = alice.execute_refund(approval)
    monkeypatch.setattr(refunds, "SETTLE_WINDOW", timedelta(0))

    assert alice.execute_refund(approval) == receipt
    fresh = refund_approval(alice.get_order("QH-1002"))
    assert refusal(lambda: alice.execute_refund(fresh)).code == "approval_expired"


def test_one_approval_id_with_another_token_is_a_conflict(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    first = refund_approval(alice.get_order("QH-1001"))
    receipt = alice.execute_refund(first)
    token = demo_keys.signer.approval_token(
        demo_identity("chen"), case_id=first.proposal.case_id, digest=first.digest, decision="approve"
    )
    resigned = first.model_copy(update={"approval_token": token})
    unsigned = first.model_copy(update={"approval_token": None})

    assert refusal(lambda: alice.execute_refund(resigned)).code == "idempotency_conflict"
    assert refusal(lambda: alice.execute_refund(unsigned)).code == "approval_signature_required"
    assert alice.execute_refund(first) == receipt
    assert alice.get_order("QH-1001").refunded_cents == 12900


def test_missing_keys_refuse_a_refund_with_one_line_and_reads_still_work(
    commerce_engine: Engine, refund_approval: MakeApproval, tmp_path: Path, demo_keys: DemoKeys
) -> None:
    no_directory = CommerceKeys(str(tmp_path / "none.json"), demo_keys.commerce_key_path)
    no_signing = CommerceKeys(str(demo_keys.directory_path), tmp_path / "none.pem")
    exposed_pem = tmp_path / "exposed.pem"
    exposed_pem.write_bytes(demo_keys.commerce_key_path.read_bytes())
    exposed_pem.chmod(0o644)
    exposed = CommerceKeys(str(demo_keys.directory_path), exposed_pem)
    for keys, env in (
        (no_directory, "COMMERCE_DIRECTORY"),
        (no_signing, "COMMERCE_SIGNING_KEY"),
        (exposed, "COMMERCE_SIGNING_KEY"),
    ):
        service = CommerceService(commerce_engine, demo_identity("alice"), keys=keys)
        assert service.get_order("QH-1001").version == 1

        approval = refund_approval(service.get_order("QH-1001"))
        error = refusal(partial(service.execute_refund, approval))

        assert isinstance(error, ConfigurationError) and error.code == "commerce_keys_unavailable"
        assert "\n" not in error.message and str(tmp_path) in error.message and env in error.message
    assert count(commerce_engine, RefundRow) == 0


def test_receipt_claims_are_built_from_the_records_only(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    receipt = alice.execute_refund(refund_approval(alice.get_order("QH-1002")))

    with Session(commerce_engine) as session:
        refund = session.get(RefundRow, receipt.approval_id)
        use = session.get(ApprovalUseRow, session.exec(sqlmodel_select(ApprovalUseRow.jti)).one())
        assert refund is not None and use is not None
        claims = receipt_claims(refund, use)

    assert claims["aud"] == "refund-receipt"
    versions = (claims["order_version_before"], claims["order_version_after"], claims["refunded_cents_after"])
    assert versions == (1, 2, 17900)


def test_a_refund_paid_before_signed_approvals_replays_unsigned_and_pays_nothing(
    commerce_engine: Engine, alice: CommerceService, refund_approval: MakeApproval
) -> None:
    """A refund row from before approval tokens (no consumed token id) keeps its receipt as recorded."""
    approval = refund_approval(alice.get_order("QH-1001"))
    proposal = approval.proposal
    with Session(commerce_engine) as session:
        session.add(
            RefundRow(
                approval_id=approval.approval_id,
                digest=approval.digest,
                tenant=proposal.tenant,
                customer=proposal.applicant,
                order_id=proposal.order_id,
                case_id=proposal.case_id,
                reviewer="chen",
                receipt_id=refunds.receipt_id_for(approval.approval_id),
                amount_cents=proposal.amount_cents,
                currency=proposal.currency,
                order_version_after=proposal.order_version + 1,
                created_at=proposal.created_at,
            )
        )
        session.commit()

    receipt = alice.execute_refund(approval)

    assert receipt.signature is None and receipt.receipt_id == refunds.receipt_id_for(approval.approval_id)
    assert count(commerce_engine, ApprovalUseRow) == 0
    assert alice.get_order("QH-1001").refunded_cents == 0
