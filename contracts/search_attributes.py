"""Search attributes of a case, so that `temporal workflow list --query` finds the work."""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey

CASE_STATUS = SearchAttributeKey.for_keyword("CaseStatus")
CASE_PHASE = SearchAttributeKey.for_keyword("CasePhase")
ORDER_ID = SearchAttributeKey.for_keyword("OrderId")
TENANT = SearchAttributeKey.for_keyword("Tenant")
REFUND_CENTS = SearchAttributeKey.for_int("RefundCents")
APPLICANT = SearchAttributeKey.for_keyword("Applicant")
"""The applicant's subject. Set at the start by the case client and then by the workflow from the
verified applicant (a start attribute is untrusted; the workflow's value overwrites it)."""

MODEL_TOKENS = SearchAttributeKey.for_int("ModelTokens")
"""Prompt plus completion tokens of the case's model replies that reported usage (release 0.5 on)."""
MODEL_COST_USD = SearchAttributeKey.for_float("ModelCostUsd")
"""The case's model cost in US dollars from the operator's price table; unset while it is unknown."""

ALL_KEYS: list[SearchAttributeKey[Any]] = [
    CASE_STATUS,
    CASE_PHASE,
    ORDER_ID,
    TENANT,
    REFUND_CENTS,
    APPLICANT,
    MODEL_TOKENS,
    MODEL_COST_USD,
]
"""Registered with the dev server as ``--search-attribute Name=Type``, and by every worker at start."""


def cli_type(key: SearchAttributeKey[Any]) -> str:
    """The type as the Temporal CLI spells it (``Keyword``, ``Int``, ``Double``)."""
    return {"KEYWORD": "Keyword", "INT": "Int", "DOUBLE": "Double"}[key.indexed_value_type.name]


def dev_server_flags() -> list[str]:
    return [f"--search-attribute={key.name}={cli_type(key)}" for key in ALL_KEYS]
