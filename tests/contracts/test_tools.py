"""The tool catalogue, the case's facts read as typed records, and the one identity check."""

from __future__ import annotations

import json

import pytest

from commerce_server.tokens import ALL_SCOPES, TOOL_SCOPES
from contracts.case_facts import CaseFacts
from contracts.directory import Directory
from contracts.errors import COMMERCE_ERROR_CLASSES, AuthorizationError, CommerceErrorCode, WorkerErrorCode
from contracts.knowledge import Language, Passage
from contracts.tools import (
    COMMERCE_TOOLS,
    INVESTIGATION_TOOLS,
    TOOLS,
    WRITE_TOOLS,
    FactKey,
    PassageView,
    ScoredPassage,
    ToolName,
    ToolSource,
)
from keystore import DEMO_DIRECTORY_PATH, demo_identity
from tests.knowledge.test_refund_quote import ORDERS, quote_packaged

PASSAGE = Passage(
    passage_id="RETURNS:p02:en:0",
    page_id="RETURNS:p02",
    doc_id="RETURNS",
    doc_version="2026-09",
    tenant="qinghe",
    language=Language.EN,
    page_title="Refund window",
    text="...",
)


def test_every_tool_name_has_one_spec_and_the_commerce_tools_one_scope_each() -> None:
    assert list(TOOLS) == list(ToolName)
    assert all(spec.name is name for name, spec in TOOLS.items())
    assert {ToolName.CREATE_TICKET, ToolName.EXECUTE_REFUND, ToolName.CLOSE_REFUND_PROPOSAL} == WRITE_TOOLS
    assert set(INVESTIGATION_TOOLS).isdisjoint(WRITE_TOOLS) and len(INVESTIGATION_TOOLS) == 12
    assert all((spec.scope is not None) == (spec.source is ToolSource.MCP) for spec in TOOLS.values())
    assert {name: spec.scope for name, spec in COMMERCE_TOOLS.items()} == TOOL_SCOPES
    assert set(TOOL_SCOPES.values()) == set(ALL_SCOPES)
    assert json.dumps(TOOL_SCOPES)[:36] == '{"list_orders": "orders:read", "get_'  # names travel as plain strings


def test_the_tool_results_are_the_json_objects_they_always_were() -> None:
    view = PassageView.of(PASSAGE).model_dump(mode="json")
    assert view == PASSAGE.model_dump(mode="json") | {"title": PASSAGE.page_title}
    assert list(view)[-1] == "title"
    scored = ScoredPassage(**dict(PassageView.of(PASSAGE)), score=1.2345).model_dump(mode="json")
    assert scored == view | {"score": 1.2345}


def test_facts_travel_in_the_order_the_tools_answered_and_read_as_typed_records() -> None:
    order, quote = ORDERS["QH-1001"], quote_packaged(ORDERS["QH-1001"])
    facts = CaseFacts()
    facts.keep(FactKey.QUOTE, quote.model_dump(mode="json"))
    facts.keep(FactKey.ORDER, order.model_dump(mode="json") | {"extra": 1})  # kept as it came, read as None
    assert list(facts.wire()) == ["quote", "order"]
    assert facts.quote == quote and facts.order is None and facts.invoice is None
    facts.keep(FactKey.ORDER, order.model_dump(mode="json"))
    assert facts.order == order and list(facts.wire()) == ["quote", "order"]
    assert set(facts.recorded_cents()) == {
        order.list_cents,
        order.discount_cents,
        order.paid_items_cents,
        order.freight_cents,
        order.refunded_cents,
        quote.amount_cents,
    }
    assert CaseFacts(facts.wire()) == facts
    assert TOOLS[ToolName.GET_ORDER].typed_result(facts.wire()["order"]) == order
    assert TOOLS[ToolName.GET_ORDER].typed_result({"order_id": "QH-1001"}) is None


def test_one_identity_check_accepts_only_directory_people_exactly() -> None:
    directory = Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8"))
    alice = demo_identity("alice")
    assert directory.check_listed(alice) == "alice"
    for forged in (alice.model_copy(update={"tenant": "south"}), alice.model_copy(update={"subject": "eve"})):
        with pytest.raises(AuthorizationError) as refused:
            directory.check_listed(forged)
        assert refused.value.code == WorkerErrorCode.IDENTITY_REJECTED


def test_the_commerce_codes_are_one_enum_with_a_class_each() -> None:
    assert set(COMMERCE_ERROR_CLASSES) == set(CommerceErrorCode)
    assert COMMERCE_ERROR_CLASSES["token_rejected"] is COMMERCE_ERROR_CLASSES[CommerceErrorCode.TOKEN_REJECTED]
