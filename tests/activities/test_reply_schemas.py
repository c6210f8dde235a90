"""Every reply schema we send accepts nothing the validator refuses, and both state the same bounds.

The schemas are generated from the contract models (activities/model/reply_schemas.py); here hypothesis
writes replies that each profile's sent schema accepts, as a grammar engine would (``replies``, a
strategy read from the schema that refuses any keyword it does not know), and the validator must take
every one. What a schema cannot know is supplied as the
workflow would: the question names the plan's order id, the cited passages were shown, and a draft's
citations are distinct and its answer not only whitespace (activities/model/reply_schemas.py says why).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from activities.model import model_validation
from activities.model.provider_profiles import PROFILES, ProfileName
from activities.model.reply_schemas import REPLY_MODELS, RESPONSE_SCHEMAS, reply_schema
from contracts.errors import ContractError
from contracts.model_io import MAX_MILESTONE_CHARS, MAX_QUERY_CHARS, ComposedAnswer, Plan, ReviewVerdict
from contracts.names import RequestKind

JSON_KINDS: tuple[RequestKind, ...] = ("plan", "compose", "review")


def _sent_schemas(kind: RequestKind) -> dict[str, dict[str, Any]]:
    """Each distinct schema a profile sends for ``kind``, by the first profile that sends it."""
    found: dict[str, dict[str, Any]] = {}
    for name, profile in PROFILES.items():
        response_format = profile.response_format(kind)
        schema = response_format.get("schema") or response_format.get("json_schema", {}).get("schema")
        if schema is not None and schema not in found.values():
            found[name] = schema
    return found


SENT = [(kind, name, schema) for kind in JSON_KINDS for name, schema in _sent_schemas(kind).items()]


KNOWN_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "anyOf",
        "pattern",
        "minLength",
        "maxLength",
        "items",
        "maxItems",
        "properties",
        "required",
        "additionalProperties",
    }
)


def replies(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Every value ``schema`` accepts (within the subset the reply schemas use), and nothing else."""
    unknown = set(schema) - KNOWN_KEYWORDS
    assert not unknown, f"the test's schema reader does not know {sorted(unknown)}"
    if "anyOf" in schema:
        return st.one_of([replies(option) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema["type"]
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength"))
    if kind == "array":
        return st.lists(replies(schema["items"]), max_size=schema.get("maxItems"))
    assert kind == "object" and schema["additionalProperties"] is False
    assert schema["required"] == list(schema["properties"])
    return st.fixed_dictionaries({name: replies(field) for name, field in schema["properties"].items()})


def _validated(kind: RequestKind, reply: dict[str, Any]) -> Plan | ComposedAnswer | ReviewVerdict:
    data = model_validation.parse_json_object(json.dumps(reply), "stop", kind=kind)
    if kind == "plan":
        question = f"Where is my order {reply['order_id']}?" if reply["order_id"] else "Where is my order?"
        return model_validation.validate_plan(data, question)
    if kind == "compose":
        return model_validation.validate_composed(data, set(reply["citations"]))
    return model_validation.validate_review(data)


def test_the_sent_schemas_are_the_full_one_openais_without_lengths_and_llama_cpp_python_s_shorter_answer() -> None:
    assert [(kind, name) for kind, name, _ in SENT] == [
        ("plan", "openai"),
        ("plan", "vllm"),
        ("compose", "openai"),
        ("compose", "vllm"),
        ("compose", "llama-cpp-python"),
        ("review", "openai"),
        ("review", "vllm"),
    ]


def _string_fields(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in _string_fields(item)]
    if not isinstance(node, dict):
        return []
    own = [node] if node.get("type") == "string" and "enum" not in node else []
    return own + [found for value in node.values() for found in _string_fields(value)]


SPANNED: list[ProfileName] = [name for name, profile in PROFILES.items() if profile.string_span is not None]


@pytest.mark.parametrize("kind", JSON_KINDS)
@pytest.mark.parametrize("name", SPANNED)
def test_no_sent_string_runs_past_its_minimum_further_than_the_profile_s_grammar_compiles(
    name: ProfileName, kind: RequestKind
) -> None:
    """llama-cpp-python 0.3.36 died of SIGSEGV on the compose schema's 4000-character answer: its
    grammar parser refuses more than 1000 optional characters and the server then samples with none."""
    profile = PROFILES[name]
    assert profile.string_span is not None
    response_format = profile.response_format(kind)
    schema = response_format.get("schema") or response_format["json_schema"]["schema"]
    bounded = [field for field in _string_fields(schema) if "maxLength" in field]
    assert bounded, "every reply schema bounds its strings"
    for field in bounded:
        assert field["maxLength"] - field.get("minLength", 0) <= profile.string_span
    if name == "llama-cpp-python" and kind == "compose":
        assert profile.string_span == 1000
        assert schema["properties"]["answer"] == {"maxLength": 1001, "minLength": 1, "type": "string"}
        assert RESPONSE_SCHEMAS["compose"]["properties"]["answer"]["maxLength"] == 4000, "the validator's own bound"


@pytest.mark.parametrize(("kind", "profile", "schema"), SENT, ids=[f"{k}-{p}" for k, p, _ in SENT])
def test_every_reply_a_sent_schema_accepts_is_one_the_validator_accepts(
    kind: RequestKind, profile: str, schema: dict[str, Any]
) -> None:
    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(reply=replies(schema))
    def check(reply: dict[str, Any]) -> None:
        if kind == "compose":
            assume(len(set(reply["citations"])) == len(reply["citations"]) and reply["answer"].strip())
        validated = _validated(kind, reply)
        assert type(validated) is REPLY_MODELS[kind]

    check()


@pytest.mark.parametrize("kind", JSON_KINDS)
def test_the_schema_is_the_contract_model_s_own(kind: RequestKind) -> None:
    """Generated, not copied: the sent schema is the model's, and every string in it is bounded."""
    schema = RESPONSE_SCHEMAS[kind]
    assert schema == reply_schema(REPLY_MODELS[kind])
    assert schema["required"] == list(REPLY_MODELS[kind].model_fields)
    for name, field in schema["properties"].items():
        strings = [field] if field.get("type") == "string" and "enum" not in field else []
        strings += [field["items"]] if field.get("type") == "array" else []
        for text in strings:
            assert text["minLength"] == 1 and text["maxLength"] > 1, name


def test_the_empty_string_plans_a_server_produced_are_refused_by_the_schema_and_kept_by_the_validator() -> None:
    """Both servers of issue 26 filled ``queries`` and ``milestones`` with "" under a schema without
    minLength, and the plan was refused. The schema now refuses "", and a blank item is dropped."""
    reply = {"intent": "refund", "order_id": None, "action_requested": True, "queries": [""], "milestones": [" "]}
    with pytest.raises(jsonschema.ValidationError, match=r"should be non-empty|is too short"):
        jsonschema.validate(reply, RESPONSE_SCHEMAS["plan"])
    plan = _validated("plan", reply)
    assert isinstance(plan, Plan) and plan.queries == [] and plan.milestones == []


@pytest.mark.parametrize(("field", "limit"), [("queries", MAX_QUERY_CHARS), ("milestones", MAX_MILESTONE_CHARS)])
def test_the_schema_and_the_validator_draw_the_length_limit_at_the_same_character(field: str, limit: int) -> None:
    plan: dict[str, Any] = {
        "intent": "policy",
        "order_id": None,
        "action_requested": False,
        "queries": [],
        "milestones": [],
    }
    longest, over = {**plan, field: ["x" * limit]}, {**plan, field: ["x" * (limit + 1)]}
    jsonschema.validate(longest, RESPONSE_SCHEMAS["plan"])
    assert _validated("plan", longest)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(over, RESPONSE_SCHEMAS["plan"])
    with pytest.raises(ContractError, match=f"the limit is {limit}"):
        _validated("plan", over)


@given(st.sampled_from(["QH-1001", "QH-0000", "qh-1002"]))
def test_the_order_id_pattern_of_the_schema_is_narrower_than_the_validator_s(order_id: str) -> None:
    reply = {"intent": "refund", "order_id": order_id, "action_requested": True, "queries": [], "milestones": []}
    schema_accepts = jsonschema.Draft202012Validator(RESPONSE_SCHEMAS["plan"]).is_valid(reply)
    plan = _validated("plan", reply)
    assert isinstance(plan, Plan) and plan.order_id == order_id.upper()
    assert schema_accepts == (order_id == order_id.upper())
