"""The commerce server's backstop on the applicant token: it must have held when the case started, as
the proposal records that start; a token copied from an earlier case's history pays nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from commerce_server.service import CommerceService
from contracts.case_start import PROPOSAL_AFTER_START_LIMIT
from contracts.commerce import RefundApproval
from contracts.errors import SupportError
from keystore import demo_identity
from tests.conftest import DemoKeys

MakeApproval = Callable[..., RefundApproval]
ALICE = demo_identity("alice")


@pytest.fixture
def alice(commerce_engine: Engine) -> CommerceService:
    return CommerceService(commerce_engine, ALICE)


def _with_token(approval: RefundApproval, demo_keys: DemoKeys, *, issued: datetime) -> RefundApproval:
    token = demo_keys.signer.applicant_token(ALICE, approval.proposal.case_id, now=issued)
    return approval.model_copy(update={"applicant_token": token})


def _refused(alice: CommerceService, approval: RefundApproval) -> SupportError:
    with pytest.raises(SupportError) as refused:
        alice.execute_refund(approval)
    assert alice.get_order("QH-1001").refunded_cents == 0  # nothing moved
    return refused.value


def test_a_token_that_held_at_the_recorded_start_pays(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    now = datetime.now(UTC)
    approval = refund_approval(alice.get_order("QH-1001"), case_started_at=now - timedelta(minutes=1))
    receipt = alice.execute_refund(_with_token(approval, demo_keys, issued=now - timedelta(minutes=2)))
    assert receipt.amount_cents == 12900


def test_a_token_that_had_expired_when_the_case_started_pays_nothing(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    """Bob's token copied from his earlier case's history, behind a case started 92 s after it expired."""
    now = datetime.now(UTC)
    issued = now - timedelta(minutes=5, seconds=92)
    approval = refund_approval(alice.get_order("QH-1001"), case_started_at=now)
    refused = _refused(alice, _with_token(approval, demo_keys, issued=issued))
    assert refused.code == "applicant_unverified" and "token_expired_at_case_start" in refused.message


def test_a_proposal_made_too_long_after_its_case_started_pays_nothing(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    now = datetime.now(UTC)
    started = now - PROPOSAL_AFTER_START_LIMIT - timedelta(minutes=1)
    approval = refund_approval(alice.get_order("QH-1001"), case_started_at=started)
    refused = _refused(alice, _with_token(approval, demo_keys, issued=started - timedelta(minutes=1)))
    assert refused.code == "applicant_unverified" and "token_older_than_proposal" in refused.message


def test_a_proposal_without_a_recorded_start_pays_nothing_on_a_long_expired_token(
    alice: CommerceService, refund_approval: MakeApproval, demo_keys: DemoKeys
) -> None:
    """A proposal shaped as releases before 0.7 made them: the token must not have expired more than the
    limit before the proposal was made (39 days here)."""
    now = datetime.now(UTC)
    approval = refund_approval(alice.get_order("QH-1001"))
    assert approval.proposal.case_started_at is None
    refused = _refused(alice, _with_token(approval, demo_keys, issued=now - timedelta(days=39)))
    assert refused.code == "applicant_unverified" and "token_older_than_proposal" in refused.message
