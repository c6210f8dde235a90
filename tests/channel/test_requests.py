"""The channel refuses what it must before a case is asked: no credential, a forged, expired or
malformed one, a token for another case, another customer's case, a body over 16 KB, a text over its
limit, too many requests. Each refusal is a code and one sentence; none reaches the cases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest

from contracts.conversation import MAX_MESSAGE_CHARS, MessageRefusal, refusal_sentence
from contracts.credentials import ISSUER_KID, applicant_claims, sign
from contracts.knowledge import Language
from customer_channel.channel import STATUS_OF_REFUSAL
from customer_channel.words import ChannelRefusal, sentence
from keystore import create_demo_directory, demo_identity, load_private_key, private_key_path
from keystore.signers import KeyFileSigner
from tests.channel.channel_double import ConversationsDouble, view_of

CASE = "c0ffee000001"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def alice(signer: KeyFileSigner, case_id: str = CASE) -> dict[str, str]:
    return bearer(signer.applicant_token(demo_identity("alice"), case_id))


@pytest.fixture
def alices_case(cases: ConversationsDouble) -> str:
    cases.views[CASE] = view_of(CASE)
    return CASE


async def test_no_credential_is_401_with_a_sentence_and_asks_no_case(
    client: httpx2.AsyncClient, cases: ConversationsDouble, alices_case: str
) -> None:
    for method, path in [
        ("POST", "/v1/conversations"),
        ("POST", f"/v1/conversations/{alices_case}/messages"),
        ("GET", f"/v1/conversations/{alices_case}"),
        ("GET", f"/v1/conversations/{alices_case}/events"),
    ]:
        answer = await client.request(method, path, json={"text": "hello"})
        assert answer.status_code == 401, (path, answer.text)
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert answer.json() == {
            "refusal": ChannelRefusal.NOT_SIGNED_IN.value,
            "message": sentence(ChannelRefusal.NOT_SIGNED_IN, Language.EN),
        }
    answer = await client.get(f"/v1/conversations/{alices_case}", headers={"Authorization": "Basic YWxpY2U6eA=="})
    assert answer.status_code == 401
    assert cases.calls == 0


def forger(tmp_path: Path) -> KeyFileSigner:
    """Someone with an issuer key of their own (a directory of their own): not the one the channel trusts."""
    create_demo_directory(tmp_path / "forger")
    return KeyFileSigner(tmp_path / "forger")


@pytest.mark.parametrize(
    "token",
    ["not-a-token", "a.b.c", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.", "x" * 5000],
    ids=["garbage", "three-parts", "alg-none", "huge"],
)
async def test_a_malformed_credential_is_refused(
    client: httpx2.AsyncClient, cases: ConversationsDouble, alices_case: str, token: str
) -> None:
    answer = await client.get(f"/v1/conversations/{alices_case}", headers=bearer(token))
    assert answer.status_code == 403, answer.text
    assert answer.json()["refusal"] == MessageRefusal.NOT_VERIFIED.value
    assert answer.json()["message"] == refusal_sentence(MessageRefusal.NOT_VERIFIED)
    assert cases.calls == 0


async def test_a_forged_credential_is_refused_everywhere(
    client: httpx2.AsyncClient, cases: ConversationsDouble, alices_case: str, tmp_path: Path
) -> None:
    forged = bearer(forger(tmp_path).applicant_token(demo_identity("alice"), alices_case))
    answers = [
        await client.post("/v1/conversations", json={"text": "Refund QH-1001"}, headers=forged),
        await client.post(f"/v1/conversations/{alices_case}/messages", json={"text": "QH-1001"}, headers=forged),
        await client.get(f"/v1/conversations/{alices_case}", headers=forged),
        await client.get(f"/v1/conversations/{alices_case}/events", headers=forged),
    ]
    assert [answer.status_code for answer in answers] == [403, 403, 403, 403]
    assert {answer.json()["refusal"] for answer in answers} == {MessageRefusal.NOT_VERIFIED.value}
    assert cases.calls == 0 and cases.started == [] and cases.sent == []


async def test_an_expired_credential_and_one_for_another_case_are_refused_with_their_sentences(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    old = signer.applicant_token(demo_identity("alice"), alices_case, now=datetime.now(UTC) - timedelta(hours=1))
    answer = await client.get(f"/v1/conversations/{alices_case}", headers=bearer(old))
    assert (answer.status_code, answer.json()["refusal"]) == (403, MessageRefusal.EXPIRED.value)
    assert answer.json()["message"] == refusal_sentence(MessageRefusal.EXPIRED)
    other = alice(signer, "0ther0case01")
    answer = await client.post(f"/v1/conversations/{alices_case}/messages", json={"text": "hi"}, headers=other)
    assert (answer.status_code, answer.json()["refusal"]) == (403, MessageRefusal.ANOTHER_CASE.value)
    zh = {**other, "Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}
    answer = await client.get(f"/v1/conversations/{alices_case}", headers=zh)
    assert answer.json()["message"] == refusal_sentence(MessageRefusal.ANOTHER_CASE, Language.ZH)
    assert cases.calls == 0


async def test_another_customers_case_reads_as_no_case_at_all(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    missing = await client.get("/v1/conversations/nosuchcase01", headers=alice(signer, "nosuchcase01"))
    bobs = await client.get(
        f"/v1/conversations/{alices_case}", headers=bearer(signer.applicant_token(demo_identity("bob"), alices_case))
    )
    lins = await client.get(
        f"/v1/conversations/{alices_case}/events",
        headers=bearer(signer.applicant_token(demo_identity("lin"), alices_case)),
    )
    bob_writes = await client.post(
        f"/v1/conversations/{alices_case}/messages",
        json={"text": "withdraw"},
        headers=bearer(signer.applicant_token(demo_identity("bob"), alices_case)),
    )
    assert [answer.status_code for answer in (missing, bobs, lins, bob_writes)] == [404, 404, 404, 404]
    assert missing.json() == bobs.json() == lins.json() == bob_writes.json()
    assert missing.json()["message"] == "No such conversation."
    assert cases.sent == []
    own = await client.get(f"/v1/conversations/{alices_case}", headers=alice(signer))
    assert own.status_code == 200 and own.json()["customer"] == "alice"
    assert own.json()["entries"][0]["text"] == "Where is QH-1005?"


async def test_a_path_that_is_no_case_id_is_404(client: httpx2.AsyncClient, signer: KeyFileSigner) -> None:
    answer = await client.get("/v1/conversations/..%2F..%2Fetc", headers=alice(signer))
    assert answer.status_code == 404
    assert answer.json()["message"]


async def chunks(total: int) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        yield b" " * 1024
        sent += 1024


async def test_a_body_over_16_kb_is_refused_before_it_is_parsed(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    big = '{"text": "' + "a" * 17_000 + '"}'
    declared = await client.post(
        f"/v1/conversations/{alices_case}/messages",
        content=big,
        headers={**alice(signer), "Content-Type": "application/json"},
    )
    streamed = await client.post("/v1/conversations", content=chunks(40_000), headers=alice(signer, "n3wcase00001"))
    for answer in (declared, streamed):
        assert answer.status_code == 413, answer.text
        assert answer.json()["refusal"] == ChannelRefusal.BODY_TOO_LARGE.value
        assert "16384 bytes" in answer.json()["message"]
    assert cases.started == [] and cases.sent == []


async def test_a_text_over_its_limit_is_413_and_a_malformed_body_422(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    path = f"/v1/conversations/{alices_case}/messages"
    too_long = await client.post(path, json={"text": "a" * (MAX_MESSAGE_CHARS + 1)}, headers=alice(signer))
    assert (too_long.status_code, too_long.json()["refusal"]) == (413, MessageRefusal.TOO_LONG.value)
    assert too_long.json()["message"] == refusal_sentence(MessageRefusal.TOO_LONG)
    for body in ('{"text": ', '{"text": 5}', '{"text": "hi", "admin": true}', '{"text": ""}', "[]"):
        answer = await client.post(path, content=body, headers={**alice(signer), "Content-Type": "application/json"})
        assert (answer.status_code, answer.json()["refusal"]) == (422, MessageRefusal.MALFORMED.value), body
    bad_id = await client.post(path, json={"text": "hi", "message_id": "no spaces!"}, headers=alice(signer))
    assert bad_id.status_code == 422
    assert cases.sent == []


async def test_a_message_reaches_the_case_with_the_credential_and_a_message_id(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    headers = alice(signer)
    answer = await client.post(
        f"/v1/conversations/{alices_case}/messages",
        json={"text": "QH-1001", "message_id": "m-0001-abcd"},
        headers=headers,
    )
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"case_id": alices_case, "message_id": "m-0001-abcd", "turn": 2, "duplicate": False}
    [(case_id, message)] = cases.sent
    assert (case_id, message.text, message.token) == (alices_case, "QH-1001", headers["Authorization"][7:])
    again = await client.post(f"/v1/conversations/{alices_case}/messages", json={"text": "and?"}, headers=headers)
    assert again.status_code == 202 and cases.sent[1][1].message_id != "m-0001-abcd"


@pytest.mark.parametrize(
    ("refusal", "status"),
    [
        (MessageRefusal.CASE_CLOSED, 409),
        (MessageRefusal.TOO_FREQUENT, 429),
        (MessageRefusal.ANOTHER_CUSTOMER, 403),
        (MessageRefusal.TOO_LONG, 413),
        (MessageRefusal.MALFORMED, 422),
    ],
)
async def test_a_message_the_case_refuses_is_answered_with_its_status_and_sentence(
    client: httpx2.AsyncClient,
    cases: ConversationsDouble,
    signer: KeyFileSigner,
    alices_case: str,
    refusal: MessageRefusal,
    status: int,
) -> None:
    cases.refuse_with = refusal
    answer = await client.post(f"/v1/conversations/{alices_case}/messages", json={"text": "hi"}, headers=alice(signer))
    assert answer.status_code == status
    assert answer.json() == {"refusal": refusal.value, "message": refusal_sentence(refusal)}


async def test_a_conversation_starts_as_the_credentials_case(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner
) -> None:
    headers = alice(signer, "n3wcase00001")
    answer = await client.post(
        "/v1/conversations", json={"text": "我想退货 QH-1001", "language": "zh"}, headers=headers
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["case_id"] == "n3wcase00001"
    assert answer.json()["events_url"] == "/v1/conversations/n3wcase00001/events"
    [case] = cases.started
    assert (case.case_id, case.question, case.language, case.applicant.subject) == (
        "n3wcase00001",
        "我想退货 QH-1001",
        Language.ZH,
        "alice",
    )
    assert case.applicant_token == headers["Authorization"][7:]


async def test_no_worker_is_503_with_a_sentence(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner
) -> None:
    cases.polled = False
    answer = await client.post("/v1/conversations", json={"text": "hello"}, headers=alice(signer, "n3wcase00002"))
    assert answer.status_code == 503
    assert answer.json()["message"] == sentence(ChannelRefusal.UNAVAILABLE, Language.EN)
    assert cases.started == []


async def test_too_many_messages_are_429_with_retry_after(
    client: httpx2.AsyncClient, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    headers = alice(signer)
    path = f"/v1/conversations/{alices_case}/messages"
    answers = [await client.post(path, json={"text": f"message {number}"}, headers=headers) for number in range(21)]
    assert [answer.status_code for answer in answers] == [202] * 20 + [429]
    refused = answers[-1]
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["refusal"] == ChannelRefusal.TOO_MANY_REQUESTS.value
    assert f"wait {refused.headers['retry-after']} seconds" in refused.json()["message"]
    assert len(cases.sent) == 20
    # Counted per verified customer: bob is not held back by alice.
    cases.views["b0bcase00001"] = view_of("b0bcase00001", customer="bob")
    bobs = bearer(signer.applicant_token(demo_identity("bob"), "b0bcase00001"))
    answer = await client.post("/v1/conversations/b0bcase00001/messages", json={"text": "hi"}, headers=bobs)
    assert answer.status_code == 202


async def test_too_many_reads_are_429(client: httpx2.AsyncClient, signer: KeyFileSigner, alices_case: str) -> None:
    headers = alice(signer)
    statuses = [(await client.get(f"/v1/conversations/{alices_case}", headers=headers)).status_code for _ in range(121)]
    assert statuses == [200] * 120 + [429]


async def test_an_unexpected_failure_is_a_sentence_not_a_trace(
    app: object, cases: ConversationsDouble, signer: KeyFileSigner, alices_case: str
) -> None:
    cases.broken = True
    transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)  # type: ignore[arg-type]
    async with httpx2.AsyncClient(transport=transport, base_url="http://channel.test") as http:
        answer = await http.get(f"/v1/conversations/{alices_case}", headers=alice(signer))
    assert answer.status_code == 500
    assert "Traceback" not in answer.text and "RuntimeError" not in answer.text
    assert answer.json()["message"] == sentence(ChannelRefusal.UNAVAILABLE, Language.EN)


async def test_a_signed_token_whose_case_id_is_no_case_id_starts_nothing(
    client: httpx2.AsyncClient, cases: ConversationsDouble, state_dir: Path
) -> None:
    claims = applicant_claims(demo_identity("alice"), case_id="../case-x", now=datetime.now(UTC), jti="j1")
    token = sign(claims, load_private_key(private_key_path(state_dir, ISSUER_KID)), kid=ISSUER_KID)
    answer = await client.post("/v1/conversations", json={"text": "hello"}, headers=bearer(token))
    assert (answer.status_code, answer.json()["refusal"]) == (403, MessageRefusal.NOT_VERIFIED.value)
    assert cases.calls == 0


def test_every_refused_message_has_an_http_status() -> None:
    """A refusal the case can answer with has its status here; one without would be a 500 (as a confirmation
    of another proposal was, before it had one)."""
    assert set(STATUS_OF_REFUSAL) == set(MessageRefusal)
