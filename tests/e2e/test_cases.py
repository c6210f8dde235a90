"""SPEC §11 cases end to end: rehearsal model, real MCP commerce server, real Temporal server."""

from __future__ import annotations

import json
import re
from pathlib import Path

from contracts.case import CaseStatus
from contracts.knowledge import Language
from contracts.model_io import Intent, NextAction
from tests.e2e.workflow_support import history_text
from workflows.deliver_gate import cited_pages


async def test_refund_inside_the_window_waits_for_exactly_12900(shared_world) -> None:
    handle = await shared_world.start("Please refund QH-1001 and explain the amount and the policy")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.proposal is not None and view.proposal.amount_cents == 12900
    assert (view.proposal.order_id, view.proposal.order_version) == ("QH-1001", 1)
    assert view.proposal.rule_version == "returns-2026-09"
    assert view.digest == view.proposal.digest()
    assert {"RETURNS:p02", "RETURNS:p03"} <= cited_pages(view.citations)
    assert view.receipt is None and view.model == "rehearsal"
    assert await (await handle.describe()).memo_value("model") == "rehearsal"
    record = json.loads(Path(view.record_path).read_text(encoding="utf-8"))
    assert record["fictional_notice"].startswith("FICTIONAL")
    assert record["case"]["proposal"]["amount_cents"] == 12900
    assert shared_world.order("QH-1001").refunded_cents == 0


async def test_a_customer_stated_amount_never_changes_the_proposal(shared_world) -> None:
    handle = await shared_world.start("I paid 9,999, refund 9999 for QH-1001")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.proposal.amount_cents == 12900


async def test_a_chinese_refund_request_cites_chinese_passages(shared_world) -> None:
    handle = await shared_world.start("请为订单 QH-1001 办理退款，并说明金额和依据", language=Language.ZH)
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.proposal.amount_cents == 12900
    assert view.citations and all(":zh:" in c for c in view.citations)


async def test_an_order_id_written_against_chinese_text_is_the_case_order(shared_world) -> None:
    handle = await shared_world.start("请退款QH-1002并给出依据", language=Language.ZH)
    view = await shared_world.settled(handle)
    assert (view.status, view.order_id) == (CaseStatus.WAITING_APPROVAL, "QH-1002"), view.reason
    assert view.proposal is not None and view.proposal.amount_cents == 17900


async def test_a_longer_id_glued_to_chinese_text_is_not_an_order(shared_world) -> None:
    handle = await shared_world.start("请退款QH-10021并给出依据", language=Language.ZH)
    view = await shared_world.settled(handle)
    assert view.order_id is None and view.proposal is None


async def test_partially_refunded_order_proposes_the_remaining_8000(shared_world) -> None:
    handle = await shared_world.start("Please refund QH-1009; why is it less than the invoice total?")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.proposal.amount_cents == 8000


async def test_day_31_is_answered_as_outside_the_window_without_a_proposal(shared_world) -> None:
    handle = await shared_world.start("Please refund QH-1003")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.COMPLETED
    assert view.proposal is None and view.digest is None
    assert view.quote is not None and view.quote.reason == "outside_window"
    assert view.quote.days_since_delivery == 31
    assert {"RETURNS:p02", "RETURNS:p03"} <= cited_pages(view.citations)


async def test_shipment_question_is_answered_from_the_delivery_terms(shared_world) -> None:
    handle = await shared_world.start("Where is my order QH-1005? Can I still change the delivery address?")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.COMPLETED
    assert view.intent is Intent.DELIVERY and view.proposal is None
    assert any(page.startswith("DELIVERY:") for page in cited_pages(view.citations))


async def test_lamp_warranty_question_cites_the_warranty_terms(shared_world) -> None:
    handle = await shared_world.start("My reading lamp from order QH-1012 stopped working. Is it under warranty?")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.COMPLETED
    assert view.intent is Intent.WARRANTY and view.proposal is None
    assert any(page.startswith("WARRANTY:") for page in cited_pages(view.citations))


async def test_a_service_the_documents_do_not_cover_gets_no_invented_policy(shared_world) -> None:
    handle = await shared_world.start("Do you offer lunar teleportation for my parcels?")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.NEEDS_HUMAN
    assert view.citations == [] and view.proposal is None and view.quote is None
    assert view.next_action is NextAction.HANDOFF


async def test_another_customers_order_leaks_nothing(shared_world) -> None:
    handle = await shared_world.start("Please refund QH-2001 and tell me what was bought")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.WAITING_CUSTOMER  # the service asks which of the customer's orders
    assert view.proposal is None and view.quote is None
    outputs = [
        view.model_dump_json(),
        Path(view.record_path).read_text(encoding="utf-8"),
        history_text(await handle.fetch_history()),
    ]
    for text in outputs:
        for secret_of_bob in ("bob", "INV-QH-2001", "SIMTRK2", "Qinghe Express"):
            # as a word: the history also holds random base64 (signed tokens, public keys, raw payloads),
            # in which three letters such as "bob" turn up by chance in about one case out of a hundred
            assert not re.search(rf"(?<![A-Za-z0-9]){re.escape(secret_of_bob)}(?![A-Za-z0-9])", text), secret_of_bob


async def test_two_orders_in_one_question_need_separate_cases(shared_world) -> None:
    handle = await shared_world.start("Please refund QH-1001 and QH-1002")
    view = await shared_world.settled(handle)
    assert view.status is CaseStatus.WAITING_CUSTOMER
    assert view.reason.startswith("one_order_per_case") and view.budgets.model_requests == 0
    assert view.tokens == "unknown"  # no provider reported usage: never a made-up zero
