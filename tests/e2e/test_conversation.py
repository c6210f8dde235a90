"""A case is a conversation (issue 47): real worker, dev server, commerce server and rehearsal model.

The service asks for the order number and waits; the customer gives it; the refund proposal waits; the
customer asks for news and is answered from the records by code; a reviewer approves and the stream
shows the receipt. Beside it: a withdrawal before approval (nothing paid), and every refused message.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError

from case_client._conversation import (
    MessageRefused,
    Progress,
    _refused,
    conversation,
    new_message_id,
    progress,
    send_message,
    start_conversation,
    wait_reply,
)
from case_client._rules import new_case
from contracts.case import CaseStatus, CaseView
from contracts.conversation import (
    KEPT_ENTRIES,
    MESSAGE,
    CustomerMessage,
    MessageAccepted,
    MessageRefusal,
    ProgressKind,
    ReplySource,
    Speaker,
    refusal_sentence,
)
from contracts.directory import ConversationPolicy
from contracts.errors import SupportError
from contracts.knowledge import Language
from contracts.names import StopCode
from keystore import DIRECTORY_ENV, demo_identity, load_directory, write_directory
from tests.case_world import CaseWorld, open_world
from tests.credentials_support import applicant_token, signed_review, use_test_keys

ALICE = demo_identity("alice")


async def _start(world: CaseWorld, text: str) -> tuple[WorkflowHandle, int]:
    case = new_case(ALICE, text)
    case = case.model_copy(update={"applicant_token": applicant_token(ALICE, case.case_id)})
    handle, reply = await start_conversation(world.client, world.task_queue, case, wait_seconds=25)
    assert reply.reply is not None, reply
    return handle, reply.turn


async def _say(handle: WorkflowHandle, text: str, *, who: str = "alice", case_id: str | None = None) -> int:
    token = applicant_token(demo_identity(who), case_id or handle.id.removeprefix("case-"))
    accepted = await send_message(handle, CustomerMessage(text=text, token=token, message_id=new_message_id()))
    return accepted.turn


async def _progress_until(world: CaseWorld, handle: WorkflowHandle, kind: ProgressKind) -> list[Progress]:
    seen: list[Progress] = []

    async def read() -> None:
        async for item in progress(world.client, handle.id):
            seen.append(item)
            if item.item.kind is kind:
                return

    await asyncio.wait_for(read(), timeout=60)
    return seen


async def _all_progress(world: CaseWorld, handle: WorkflowHandle) -> list[Progress]:
    """Every progress item, read as a live reader does: the iterator ends only once the case has ended."""
    return [item async for item in progress(world.client, handle.id)]


async def test_the_service_asks_for_the_order_then_the_refund_waits_news_come_from_records_and_the_receipt_streams(
    world: CaseWorld,
) -> None:
    handle, _ = await _start(world, "I want a refund for my lamp, it arrived broken")
    view = await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_CUSTOMER)
    asked = view.conversation[-1]
    assert asked.speaker is Speaker.SERVICE and "order" in asked.text.lower()
    assert view.waiting_until is not None

    turn = await _say(handle, "It is order QH-1001")
    assert turn == 2
    reply = await wait_reply(handle, turn, wait_seconds=25)
    view = await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_APPROVAL)
    assert view.proposal is not None and view.proposal.amount_cents == 12900
    assert reply.reply is not None

    news = await _say(handle, "any news?")
    answer = await wait_reply(handle, news, wait_seconds=25)
    assert answer.reply is not None and answer.reply.source is ReplySource.CASE_RECORDS
    assert "129.00" in answer.reply.text and "QH-1001" in answer.reply.text
    assert answer.status is CaseStatus.WAITING_APPROVAL

    await world.cases.open(handle.id).review(signed_review("chen", view.case_id, _digest(view)))
    items = await _progress_until(world, handle, ProgressKind.RECEIPT)
    kinds = [item.item.kind for item in items]
    assert ProgressKind.WAITING_FOR_CUSTOMER in kinds and ProgressKind.WAITING_FOR_REVIEWER in kinds
    assert ProgressKind.READING_ORDER in kinds
    assert [item.offset for item in items] == list(range(len(items)))
    receipt = items[-1].item.text
    assert "12900 cents" in receipt and "SIMULATED" in receipt
    assert world.order("QH-1001").refunded_cents == 12900
    transcript = await conversation(handle)
    speakers = [entry.speaker for entry in transcript.entries]
    assert speakers.count(Speaker.CUSTOMER) == 3
    assert all("any news" not in item.item.text for item in items)  # customer text never on the stream


async def test_a_customer_withdraws_before_approval_and_nothing_is_paid(world: CaseWorld) -> None:
    handle, _ = await _start(world, "Please refund QH-1001")
    view = await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_APPROVAL)
    await _say(handle, "withdraw")
    view = await world.wait_for(handle, lambda v: v.status is CaseStatus.WITHDRAWN)
    assert view.receipt is None and world.order("QH-1001").refunded_cents == 0
    everything = await asyncio.wait_for(_all_progress(world, handle), timeout=60)  # ends with the case
    kinds = [item.item.kind for item in everything]
    assert kinds[-3:] == [ProgressKind.WITHDRAWN, ProgressKind.REPLY, ProgressKind.CLOSED], kinds
    with pytest.raises(SupportError):  # the case has ended: no review can reach it
        await world.cases.open(handle.id).review(signed_review("chen", view.case_id, _digest(view)))
    assert world.refund_records() == []


async def _refusal(handle: WorkflowHandle, payload: object) -> MessageRefused:
    with pytest.raises(MessageRefused) as refused:
        try:
            await handle.execute_update(MESSAGE, payload, result_type=MessageAccepted)
        except WorkflowUpdateFailedError as error:
            raise _refused(error, Language.EN) from None
    return refused.value


async def test_every_refused_message_is_a_sentence_and_never_kept(world: CaseWorld) -> None:
    handle, _ = await _start(world, "I want a refund for my lamp")
    await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_CUSTOMER)
    case_id = handle.id.removeprefix("case-")
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    expired = use_test_keys().applicant_token(ALICE, case_id, now=hour_ago, lifetime=timedelta(minutes=5))
    attempts: dict[MessageRefusal, dict[str, object]] = {
        MessageRefusal.ANOTHER_CUSTOMER: _payload("QH-2001 marker-one", applicant_token(demo_identity("bob"), case_id)),
        MessageRefusal.ANOTHER_CASE: _payload("QH-1001 marker-two", applicant_token(ALICE, "another-case-1")),
        MessageRefusal.EXPIRED: _payload("QH-1001 marker-three", expired),
        MessageRefusal.NOT_VERIFIED: _payload("QH-1001 marker-four", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9."),
        MessageRefusal.TOO_LONG: _payload("x" * 2001, applicant_token(ALICE, case_id)),
        MessageRefusal.MALFORMED: {"text": "QH-1001 marker-five", "message_id": new_message_id()},
    }
    for refusal, payload in attempts.items():
        refused = await _refusal(handle, payload)
        assert refused.refusal is refusal, (refusal, refused)
        assert refused.message == refusal_sentence(refusal)
    view = await world.cases.open(handle.id).status()
    customer = [e for e in view.conversation if e.speaker is Speaker.CUSTOMER]
    assert len(customer) == 1 and view.status is CaseStatus.WAITING_CUSTOMER
    events = " ".join(event.detail for event in await world.cases.open(handle.id).events())
    assert "marker-" not in events and all("marker-" not in e.text for e in view.conversation)


async def test_a_flood_of_messages_is_refused_as_too_frequent_and_what_was_taken_is_answered(world: CaseWorld) -> None:
    handle, _ = await _start(world, "I want a refund for my lamp")
    await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_CUSTOMER)
    case_id = handle.id.removeprefix("case-")
    token = applicant_token(ALICE, case_id)
    outcomes = await asyncio.gather(
        *(
            send_message(handle, CustomerMessage(text=f"note {n}", token=token, message_id=new_message_id()))
            for n in range(12)
        ),
        return_exceptions=True,
    )
    refused = [o for o in outcomes if isinstance(o, MessageRefused)]
    accepted = [o for o in outcomes if isinstance(o, MessageAccepted)]
    assert refused and all(r.refusal is MessageRefusal.TOO_FREQUENT for r in refused)
    assert len(accepted) + len(refused) == 12
    view = await world.cases.open(handle.id).status()
    texts = [e.text for e in view.conversation if e.speaker is Speaker.CUSTOMER]
    assert len(texts) == 1 + len(accepted)


async def test_a_message_to_a_closed_case_is_refused(world: CaseWorld) -> None:
    handle, _ = await _start(world, "Please refund QH-1001")
    await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_APPROVAL)
    await _say(handle, "withdraw")
    await world.wait_for(handle, lambda v: v.status is CaseStatus.WITHDRAWN)
    with pytest.raises(MessageRefused) as closed:
        await _say(handle, "any news?")
    assert closed.value.refusal is MessageRefusal.CASE_CLOSED


async def test_fifty_messages_continue_as_new_with_a_bounded_transcript_and_pay_once(world: CaseWorld) -> None:
    handle, _ = await _start(world, "Please refund QH-1001")
    view = await world.wait_for(handle, lambda v: v.status is CaseStatus.WAITING_APPROVAL)
    for n in range(2, 51):
        turn = await _say(handle, f"any news? ({n})")
        assert turn == n
        reply = await wait_reply(handle, turn, wait_seconds=25)
        assert reply.reply is not None and reply.reply.source is ReplySource.CASE_RECORDS, (n, reply)
    view = await world.cases.open(handle.id).status()
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.conversation_dropped > 0 and len(view.conversation) == KEPT_ENTRIES
    assert view.conversation[-2].text == "any news? (50)" and view.conversation[-1].turn == 50
    runs = [e for e in await world.cases.open(handle.id).events() if e.kind == "continued_as_new"]
    assert len(runs) >= 2
    await world.cases.open(handle.id).review(signed_review("chen", view.case_id, _digest(view)))
    items = await _progress_until(world, handle, ProgressKind.RECEIPT)
    assert [i.offset for i in items] == sorted({i.offset for i in items})  # in order, none twice
    assert world.order("QH-1001").refunded_cents == 12900 and len(world.refund_records()) == 1


def _payload(text: str, token: str) -> dict[str, object]:
    return {"text": text, "token": token, "message_id": new_message_id()}


async def test_a_case_waiting_for_its_customer_closes_at_the_tenants_idle_limit(
    temporal_client: Client, tmp_path: Path
) -> None:
    directory = load_directory(os.environ[DIRECTORY_ENV])
    hasty = [
        tenant.model_copy(update={"conversation": ConversationPolicy(idle_hours=0.0005)})
        for tenant in directory.tenants
    ]  # 1.8 s
    path = tmp_path / "directory.json"
    write_directory(path, directory.model_copy(update={"tenants": hasty}))
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state", directory=str(path))
    async with worker:
        handle, _ = await _start(world, "I want a refund for my lamp")
        view = await world.wait_for(handle, lambda v: v.status is CaseStatus.NEEDS_INPUT)
        assert view.reason == StopCode.CUSTOMER_IDLE.value
        assert view.conversation[-1].source is ReplySource.STATUS_NOTICE
        assert "did not hear back" in view.conversation[-1].text
        items = await _progress_until(world, handle, ProgressKind.CLOSED)
        assert ProgressKind.WAITING_FOR_CUSTOMER in [item.item.kind for item in items]
        with pytest.raises(MessageRefused) as closed:
            await _say(handle, "QH-1001")
        assert closed.value.refusal is MessageRefusal.CASE_CLOSED
    await cleanup()
    world.engine.dispose()


def _digest(view: CaseView) -> str:
    assert view.digest is not None, f"{view.case_id} has no proposal to review ({view.status})"
    return view.digest
