"""The tool catalogue, the case's facts read as typed records, and the one identity check."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commerce_server.tokens import ALL_SCOPES, TOOL_SCOPES
from contracts.case_facts import CaseFacts
from contracts.directory import Directory
from contracts.errors import COMMERCE_ERROR_CLASSES, AuthorizationError, CommerceErrorCode, WorkerErrorCode
from contracts.tools import (
    COMMERCE_TOOLS,
    INVESTIGATION_TOOLS,
    TOOLS,
    WRITE_TOOLS,
    FactKey,
    ParamSpec,
    PassageView,
    ScoredPassage,
    ToolName,
    ToolSource,
)
from keystore import DEMO_DIRECTORY_PATH, demo_identity
from tests.case_data import ORDERS, passage, quote_packaged

PASSAGE = passage("RETURNS:p02:en:0", title="Refund window")


def test_every_tool_name_has_one_spec_and_the_commerce_tools_one_scope_each() -> None:
    assert list(TOOLS) == list(ToolName)
    assert all(spec.name is name for name, spec in TOOLS.items())
    assert {
        ToolName.CREATE_TICKET,
        ToolName.EXECUTE_REFUND,
        ToolName.CLOSE_REFUND_PROPOSAL,
        ToolName.PREVIEW_ACTION,
        ToolName.EXECUTE_ACTION,
        ToolName.CLOSE_ACTION_PROPOSAL,
    } == WRITE_TOOLS
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


regex_parser: Any = importlib.import_module("re._parser")  # the stdlib's own regex parser, untyped

PATTERNED: dict[str, ParamSpec] = {
    f"{tool}.{name}": spec
    for tool, tool_spec in INVESTIGATION_TOOLS.items()
    for name, spec in tool_spec.params.items()
    if spec.pattern
}
PATTERNED_PARAMS = [pytest.param(spec, id=key) for key, spec in PATTERNED.items()]


def _repeat_bounds(parsed: Any) -> list[int]:
    """The upper bound of every repetition in a parsed regex (``re._parser``), nested ones included."""
    bounds: list[int] = []
    for op, value in parsed:
        if op in (regex_parser.MAX_REPEAT, regex_parser.MIN_REPEAT):
            _, upper, sub = value
            bounds += [upper, *_repeat_bounds(sub)]
        elif op is regex_parser.SUBPATTERN:
            bounds += _repeat_bounds(value[-1])
        elif op is regex_parser.BRANCH:
            bounds += [bound for branch in value[1] for bound in _repeat_bounds(branch)]
    return bounds


@pytest.mark.parametrize("spec", PATTERNED_PARAMS)
def test_every_argument_pattern_is_anchored_and_each_repetition_bounded_by_the_max_length(spec: ParamSpec) -> None:
    # A grammar engine drops maxLength beside a pattern: an unbounded run would be an argument without end.
    assert spec.pattern is not None and spec.pattern.startswith("^") and spec.pattern.endswith("$")
    bounds = _repeat_bounds(regex_parser.parse(spec.pattern))
    assert bounds, "a pattern with no repetition needs no bound"
    assert all(bound != regex_parser.MAXREPEAT and bound <= spec.max_length for bound in bounds), bounds
    assert "\\d" not in spec.pattern


BOUNDED_RUN = re.compile(r"\{1,[0-9]+\}")
UNBOUNDED_FORMS = [
    pytest.param(spec, BOUNDED_RUN.sub("+", spec.pattern), id=key)
    for key, spec in PATTERNED.items()
    if spec.pattern and BOUNDED_RUN.search(spec.pattern)
]


def test_the_patterns_with_a_run_of_any_length_are_the_sku_the_passage_id_and_the_skill_name() -> None:
    named = [key for key, spec in PATTERNED.items() if spec.pattern and BOUNDED_RUN.search(spec.pattern)]
    assert named == ["get_product.sku", "read_knowledge.passage_id", "load_skill.name"]


@pytest.mark.parametrize(("spec", "unbounded"), UNBOUNDED_FORMS)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_bounded_pattern_accepts_what_its_unbounded_form_does_within_the_max_length(
    spec: ParamSpec, unbounded: str, data: st.DataObject
) -> None:
    # The gate checks the length first, so {1,n} and + decide the same for every argument it reaches.
    assert spec.pattern is not None
    value = data.draw(st.from_regex(unbounded, fullmatch=True).filter(lambda text: len(text) <= spec.max_length))
    assert re.fullmatch(spec.pattern, value)
    value = data.draw(st.from_regex(spec.pattern, fullmatch=True))
    assert re.fullmatch(unbounded, value)
