"""A merchant's own login service vouches for its customers: RS256 applicant tokens of an outside issuer,
its key set served over real local HTTP, checked by the real worker against the directory, and again
by the commerce server (its own copy of the settings) when it pays.

The worker is built with ``SUPPORT_APPLICANT_ISSUER`` and ``SUPPORT_APPLICANT_JWKS_URL`` set, as a
deployment sets them; the cases start through :class:`case_client.CaseClient`, whose issuer here is the
login service minting a token for each case.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from temporalio.client import Client

from activities.commerce.commerce_client import open_stdio_client
from case_client import CaseClient
from contracts.case import CaseStatus, CaseView
from contracts.commerce import RefundApproval
from contracts.credentials import APPLICANT_AUDIENCE
from contracts.errors import SupportError
from contracts.identity import Identity
from contracts.names import ActivityName
from contracts.tools import ToolName
from keystore.outside_issuer import ISSUER_ENV, JWKS_URL_ENV
from keystore.signers import KeyFileSigner
from tests.case_world import scheduled_activity_types
from tests.e2e.merchant_world import Merchant, running_merchant
from tests.jwks_support import JwksServer, serve_jwks

ISSUER = "https://login.merchant.example/"
KID = "merchant-login-2026"
REFUND_QUESTION = "Please refund my order QH-1001, the return arrived at your warehouse."


@dataclass
class LoginService:
    """The merchant's identity provider: an RSA key whose public half its JWKS URL serves."""

    key: rsa.RSAPrivateKey
    jwks: JwksServer

    def token(
        self, subject: str, tenant: str, *, issuer: str = ISSUER, key: Any = None, issued: datetime | None = None
    ) -> str:
        now = issued or datetime.now(UTC)
        claims = {
            "iss": issuer,
            "aud": APPLICANT_AUDIENCE,
            "sub": subject,
            "tenant": tenant,
            "role": "customer",
            "iat": int(now.timestamp()),
            "exp": int((now + timedelta(minutes=10)).timestamp()),
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": KID})


@dataclass
class OutsideMerchant:
    shop: Merchant
    login: LoginService

    def cases(self, issue: Callable[[Identity, str], str]) -> CaseClient:
        return CaseClient.for_client(self.shop.client, task_queue=self.shop.task_queue, issuer=issue)

    async def ask(self, applicant: str, token: str, question: str = REFUND_QUESTION) -> CaseView:
        cases = self.cases(lambda _identity, _case_id: token)
        handle = await cases.start(self.shop.identity(applicant), question, ttl_seconds=900)
        return await handle.settled(timeout=90, poll_seconds=0.2)


@pytest.fixture(scope="module")
def login_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
async def outside(
    temporal_server,
    temporal_client: Client,
    tmp_path: Path,
    isolated_environment: None,
    monkeypatch: pytest.MonkeyPatch,
    login_key: rsa.RSAPrivateKey,
) -> AsyncIterator[OutsideMerchant]:
    public = RSAAlgorithm.to_jwk(login_key.public_key(), as_dict=True)
    with serve_jwks({"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}) as jwks:
        monkeypatch.setenv(ISSUER_ENV, ISSUER)
        monkeypatch.setenv(JWKS_URL_ENV, jwks.url)
        async with running_merchant(temporal_server, temporal_client, tmp_path / "merchant") as shop:
            yield OutsideMerchant(shop, LoginService(login_key, jwks))


async def test_a_customer_of_the_login_service_reads_their_own_order_and_is_paid_once(
    outside: OutsideMerchant,
) -> None:
    view = await outside.ask("alice", outside.login.token("alice", "qinghe"))
    assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
    assert (view.applicant, view.tenant, view.order_id) == ("alice", "qinghe", "QH-1001")
    assert view.proposal is not None and view.proposal.amount_cents == 12900
    assert outside.login.jwks.requests, "the worker fetched the key set over HTTP"
    events = await outside.shop.events(view.case_id)
    assert f"applicant_verified: alice (qinghe), signed by the {ISSUER} issuer" in " ".join(events), events

    approved = await outside.shop.review("chen", view)
    assert approved.returncode == 0, approved.stderr
    paid = await outside.shop.view(view.case_id)
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None, (paid.status, paid.reason)
    refunds = [(row.case_id, row.customer, row.reviewer, row.amount_cents) for row in outside.shop.refunds()]
    assert refunds == [(view.case_id, "alice", "chen", 12900)]


async def test_a_token_the_login_service_did_not_issue_for_this_customer_reads_nothing(
    outside: OutsideMerchant,
) -> None:
    login = outside.login
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    attempts = {
        # applicant named at start, token, the reason the case must end with
        "unknown issuer": ("alice", login.token("alice", "qinghe", issuer="https://other.example/"), "wrong_issuer"),
        "tenant claim disagrees": ("alice", login.token("alice", "south"), "unknown_applicant"),
        "key not in the key set": ("alice", login.token("alice", "qinghe", key=stranger), "bad_signature"),
        "token for another customer": ("alice", login.token("bob", "qinghe"), "applicant_mismatch"),
        "built-in issuer's token": ("alice", _built_in_token(outside, "alice"), "wrong_algorithm"),
    }
    for name, (applicant, token, code) in attempts.items():
        view = await outside.ask(applicant, token)
        assert (view.status, view.reason) == (CaseStatus.FAILED, f"applicant_unverified:{code}"), name
        assert (view.order_id, view.quote, view.proposal) == (None, None, None), name
        assert await scheduled_activity_types(outside.shop.client.get_workflow_handle(f"case-{view.case_id}")) == [
            ActivityName.VERIFY_APPLICANT.value,
            ActivityName.WRITE_CASE_RECORD.value,
        ], name
    assert outside.shop.refunds() == []


def _built_in_token(outside: OutsideMerchant, subject: str) -> str:
    """The demo issuer's EdDSA token: once an outside issuer is set, the worker accepts only its tokens."""
    return KeyFileSigner(outside.shop.state_dir).applicant_token(outside.shop.identity(subject), uuid.uuid4().hex[:12])


async def test_an_id_token_that_had_expired_when_the_case_started_pays_nothing(outside: OutsideMerchant) -> None:
    """A proposal sent straight to the commerce server with chen's real approval: an ID token issued 39
    days before the case started is refused there (never "accepted whatever its age"), and the same
    approval with a token that held at the start pays, once."""
    view = await outside.ask("alice", outside.login.token("alice", "qinghe"))
    assert view.proposal is not None, (view.status, view.reason)
    now = datetime.now(UTC)
    proposal = view.proposal.model_copy(
        update={
            "case_id": f"fresh{uuid.uuid4().hex[:10]}",
            "case_started_at": now,
            "created_at": now,
            "expires_at": now + timedelta(minutes=15),
        }
    )
    shop = outside.shop
    approval_token = KeyFileSigner(shop.state_dir).approval_token(
        shop.identity("chen"), case_id=proposal.case_id, digest=proposal.digest(), decision="approve"
    )

    def approval(applicant_token: str) -> dict[str, Any]:
        return RefundApproval(
            approval_id=f"direct-{uuid.uuid4().hex[:12]}",
            proposal=proposal,
            digest=proposal.digest(),
            reviewer="chen",
            approved_at=now,
            approval_token=approval_token,
            applicant_token=applicant_token,
        ).model_dump(mode="json")

    expired = outside.login.token("alice", "qinghe", issued=now - timedelta(days=39))
    async with open_stdio_client("alice", shop.state_dir) as commerce:
        with pytest.raises(SupportError) as refused:
            await commerce.call(ToolName.EXECUTE_REFUND, {"approval": approval(expired)})
        assert refused.value.code == "applicant_unverified", refused.value
        assert "token_expired_at_case_start" in refused.value.message, refused.value.message
        assert shop.refunds() == []
        held = outside.login.token("alice", "qinghe", issued=now - timedelta(minutes=1))
        await commerce.call(ToolName.EXECUTE_REFUND, {"approval": approval(held)})
    assert [(row.case_id, row.amount_cents) for row in shop.refunds()] == [(proposal.case_id, 12900)]
