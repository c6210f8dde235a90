"""With an outside identity provider configured (its key set served over local HTTP), the channel takes
its ID tokens: a new conversation gets a fresh case id (the token names none) and the case is the
token's customer's; a read is for that customer only; a built-in token no longer starts a conversation
(as the worker judges a case's start) but still reads the case it names."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from contracts.conversation import MessageRefusal
from customer_channel import BearerVerifier, ChannelConfig, build_app
from keystore import demo_identity, directory_location
from keystore.directory_file import DirectorySource
from keystore.outside_issuer import OutsideIssuer
from keystore.signers import KeyFileSigner
from tests.channel.channel_double import ConversationsDouble
from tests.jwks_support import JwksServer, serve_jwks

pytestmark = pytest.mark.slow  # the key set is fetched from a local HTTP server

ISSUER = "https://idp.example.test/"
KID = "idp-ed"
KEY = Ed25519PrivateKey.generate()


@pytest.fixture
def jwks() -> Iterator[JwksServer]:
    public = OKPAlgorithm.to_jwk(KEY.public_key(), as_dict=True)
    with serve_jwks({"keys": [{**public, "kid": KID, "alg": "EdDSA", "use": "sig"}]}) as running:
        yield running


def id_token(subject: str, tenant: str) -> dict[str, str]:
    now = datetime.now(UTC)
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": "support-case",
        "sub": subject,
        "tenant": tenant,
        "iat": int(now.timestamp()),
        "exp": int((now + timedelta(minutes=5)).timestamp()),
    }
    return {"Authorization": f"Bearer {jwt.encode(claims, KEY, algorithm='EdDSA', headers={'kid': KID})}"}


@pytest.fixture
async def outside_client(
    state_dir: Path, cases: ConversationsDouble, jwks: JwksServer
) -> AsyncIterator[httpx2.AsyncClient]:
    directory = DirectorySource(directory_location(state_dir))
    issuer = OutsideIssuer(issuer=ISSUER, jwks_url=jwks.url, algorithms=("EdDSA",))
    app = build_app(cases, directory, ChannelConfig(), verifier=BearerVerifier(directory, issuer))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as http:
        yield http


async def test_an_outside_id_token_starts_and_reads_its_customers_conversation(
    outside_client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner
) -> None:
    alice = id_token("alice", "qinghe")
    started = await outside_client.post("/v1/conversations", json={"text": "Where is QH-1005?"}, headers=alice)
    assert started.status_code == 201, started.text
    case_id = started.json()["case_id"]
    [case] = cases.started
    assert (case.case_id, case.applicant.subject, case.applicant_token) == (
        case_id,
        "alice",
        alice["Authorization"][7:],
    )
    again = await outside_client.post("/v1/conversations", json={"text": "Where is QH-1005?"}, headers=alice)
    assert again.json()["case_id"] != case_id  # the token names no case: each start is a new one
    keyed = [
        await outside_client.post(
            "/v1/conversations", json={"text": "Where is QH-1005?"}, headers={**alice, "Idempotency-Key": "retry-0001"}
        )
        for _ in range(2)
    ]
    assert keyed[0].json()["case_id"] == keyed[1].json()["case_id"] not in (case_id, again.json()["case_id"])
    lins_key = await outside_client.post(
        "/v1/conversations", json={"text": "hi"}, headers={**id_token("lin", "south"), "Idempotency-Key": "retry-0001"}
    )
    assert lins_key.json()["case_id"] != keyed[0].json()["case_id"]  # a key is the customer's own
    bad_key = await outside_client.post(
        "/v1/conversations", json={"text": "hi"}, headers={**alice, "Idempotency-Key": "no"}
    )
    assert (bad_key.status_code, bad_key.json()["refusal"]) == (422, MessageRefusal.MALFORMED.value)

    assert (await outside_client.get(f"/v1/conversations/{case_id}", headers=alice)).status_code == 200
    lins = await outside_client.get(f"/v1/conversations/{case_id}", headers=id_token("lin", "south"))
    assert lins.status_code == 404
    wrong_tenant = await outside_client.get(f"/v1/conversations/{case_id}", headers=id_token("alice", "south"))
    assert (wrong_tenant.status_code, wrong_tenant.json()["refusal"]) == (403, MessageRefusal.NOT_VERIFIED.value)

    built_in = {"Authorization": f"Bearer {signer.applicant_token(demo_identity('alice'), case_id)}"}
    assert (await outside_client.get(f"/v1/conversations/{case_id}", headers=built_in)).status_code == 200
    refused = await outside_client.post("/v1/conversations", json={"text": "hello"}, headers=built_in)
    assert (refused.status_code, refused.json()["refusal"]) == (403, MessageRefusal.NOT_VERIFIED.value)
    assert len(cases.started) == 5
