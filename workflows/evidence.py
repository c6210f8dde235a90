"""Evidence folding: what a successful tool observation adds to the case's facts and evidence.

Pure and deterministic. Facts are the records the commerce server returned for this applicant;
evidence is the policy passages an answer may cite. The evidence is capped, except for the passages
that back a refund quote, which are always kept (the deliver gate requires them to be cited).
"""

from __future__ import annotations

import json
from typing import Any

from contracts.case import ToolObservation
from contracts.commerce import RefundQuote
from contracts.knowledge import Passage

MAX_EVIDENCE = 12
MAX_OBSERVATION_CHARS = 6000
"""How much of one observation is replayed to the model in later turns."""
RECORD_TOOLS = frozenset({"get_order", "get_shipment", "get_invoice", "get_product", "get_ticket", "list_orders"})


def fold_observation(
    tool: str, observation: ToolObservation, facts: dict[str, Any], evidence: dict[str, Passage]
) -> RefundQuote | None:
    """Add the facts and passages of a successful observation; return the quote it carries, if any."""
    result = observation.result or {}
    quote: RefundQuote | None = None
    if tool == "calculate_refund" and "quote" in result:
        quote = RefundQuote.model_validate(result["quote"])
        facts["quote"] = result["quote"]
    elif tool in RECORD_TOOLS:
        facts[tool.removeprefix("get_")] = result
    elif tool == "get_language_preference":
        facts["language_preference"] = result
    passages = result.get("passages", [])
    if tool == "read_knowledge" and "passage_id" in result:
        passages = [result]
    priority = tool == "calculate_refund"
    for raw in passages:
        passage = to_passage(raw)
        if passage is None or passage.passage_id in evidence:
            continue
        if len(evidence) >= MAX_EVIDENCE and not priority:
            continue
        evidence[passage.passage_id] = passage
    return quote


def to_passage(raw: Any) -> Passage | None:
    """A passage from an observation's dict, ignoring fields a passage does not have; None if invalid."""
    if not isinstance(raw, dict):
        return None
    try:
        return Passage.model_validate({k: v for k, v in raw.items() if k in Passage.model_fields})
    except ValueError:
        return None


def transcript_content(observation: ToolObservation) -> str:
    """The observation as the model reads it in later turns (JSON, cut to a fixed size)."""
    return json.dumps(observation.model_dump(mode="json"), ensure_ascii=False)[:MAX_OBSERVATION_CHARS]
