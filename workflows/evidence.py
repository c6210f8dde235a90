"""Evidence folding: what a successful tool observation adds to the case's facts and evidence.

Pure and deterministic. Facts are the records the commerce server returned for this applicant;
evidence is the policy passages an answer may cite. The evidence is capped, except for the passages
that back a refund quote, which are always kept (the deliver gate requires them to be cited).
"""

from __future__ import annotations

import json
from typing import Any

from contracts.case_facts import CaseFacts
from contracts.commerce import RefundQuote
from contracts.knowledge import Passage
from contracts.model_io import ToolObservation
from contracts.tools import TOOLS, FactKey, ToolName

MAX_EVIDENCE = 12
MAX_OBSERVATION_CHARS = 6000
"""How much of one observation is replayed to the model in later turns."""


def fold_observation(
    tool: str, observation: ToolObservation, facts: CaseFacts, evidence: dict[str, Passage]
) -> RefundQuote | None:
    """Add the facts and passages of a successful observation; return the quote it carries, if any.

    The catalogue says which fact a tool's result is (:attr:`~contracts.tools.ToolSpec.fact`); a
    ``calculate_refund`` result contributes its ``quote``, which must be a valid quote. Passages come
    from a result's ``passages`` (or are the result, for ``read_knowledge``); invalid ones are skipped."""
    result = observation.result or {}
    spec = TOOLS.get(tool)
    fact = spec.fact if spec is not None else None
    quote: RefundQuote | None = None
    if fact is FactKey.QUOTE:
        if "quote" in result:
            quote = RefundQuote.model_validate(result["quote"])
            facts.keep(fact, result["quote"])
    elif fact is not None:
        facts.keep(fact, result)
    passages = result.get("passages", [])
    if tool == ToolName.READ_KNOWLEDGE and "passage_id" in result:
        passages = [result]
    priority = tool == ToolName.CALCULATE_REFUND
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
