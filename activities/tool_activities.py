"""The investigation tools the model may request, executed for one applicant.

The workflow has already validated every call (known tool, exact fields, bound order id). This
activity checks again, because it is the side that performs I/O: a request it cannot trust fails
as a non-retryable ``authorization`` or ``contract`` error instead of being executed.

Refusals the model should learn from (a foreign order, an unknown skill, an inapplicable passage)
come back as ``ToolObservation(ok=False, ...)`` with the refusal's stable code and message only.
Transient failures are raised so that Temporal retries the activity on a fresh commerce session;
configuration faults (a commerce server refusing this worker's token) are raised so that the case fails
with the reason, never reaching the model as if the order did not exist.
Host-injected values (identity, tenant, language, the fixture as-of date) never come from the model.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from temporalio import activity

from activities.commerce_sessions import CommerceGateway
from activities.preferences import LanguagePreferences
from contracts.case import ToolObservation, ToolRequest
from contracts.commerce import FIXTURE_AS_OF, Order
from contracts.errors import (
    AuthorizationError,
    ConfigurationError,
    ContractError,
    SupportError,
    TransientError,
)
from contracts.identity import PROFILES
from contracts.knowledge import Passage
from contracts.names import ActivityName
from contracts.tools import INVESTIGATION_TOOLS, ToolSpec
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.skills import load_skill
from knowledge.store import KnowledgeBase

ACTIVITY_SOURCES = frozenset({"mcp", "knowledge"})
"""Tools with another source (``case``: save_case_note) live in workflow state, never here."""

MAX_ERROR_MESSAGE_CHARS = 300


class ToolActivities:
    def __init__(self, pool: CommerceGateway, knowledge: KnowledgeBase, preferences: LanguagePreferences) -> None:
        self.pool = pool
        self.knowledge = knowledge
        self.preferences = preferences

    @activity.defn(name=ActivityName.RUN_INVESTIGATION_TOOL)
    async def run_investigation_tool(self, request: ToolRequest) -> ToolObservation:
        _check(request)
        try:
            result = await self.dispatch(request)
        except (TransientError, ConfigurationError):
            raise  # retried, or the case fails with the reason: never shown to the model as an answer
        except SupportError as error:
            activity.logger.info("%s for case %s refused: %s", request.name, request.case_id, error.code)
            return ToolObservation(
                call_id=request.call_id,
                name=request.name,
                ok=False,
                error_code=error.code,
                error_message=error.message[:MAX_ERROR_MESSAGE_CHARS],
            )
        return ToolObservation(call_id=request.call_id, name=request.name, ok=True, result=result)

    async def dispatch(self, request: ToolRequest) -> dict[str, Any]:
        """Run one checked request; typed refusals propagate as :class:`SupportError`."""
        spec = INVESTIGATION_TOOLS[request.name]
        arguments = request.arguments
        applicant = request.applicant
        if spec.source == "mcp":
            return await self.pool.call(applicant, request.name, dict(arguments), case_id=request.case_id)
        if request.name == "search_knowledge":
            hits = self.knowledge.search(
                arguments["query"], tenant=applicant.tenant, language=request.language, as_of=FIXTURE_AS_OF
            )
            return {"passages": [_passage_view(hit.passage) | {"score": round(hit.score, 4)} for hit in hits]}
        if request.name == "read_knowledge":
            return _passage_view(self._read_passage(request))
        if request.name == "load_skill":
            return {"name": arguments["name"], "body": load_skill(arguments["name"], request.language)}
        if request.name == "calculate_refund":
            return await self._calculate_refund(request)
        if request.name == "get_language_preference":
            preference = self.preferences.get(applicant.subject)
            return {"language": preference.value if preference else None}
        raise AuthorizationError("tool_call_rejected", f"The tool {request.name!r} is not executed here.")

    def _read_passage(self, request: ToolRequest) -> Passage:
        """A read by id applies the search rule too: the case's tenant, date and language only."""
        passage = self.knowledge.read_passage(
            request.arguments["passage_id"], tenant=request.applicant.tenant, as_of=FIXTURE_AS_OF
        )
        if passage.language is not request.language:
            raise AuthorizationError(
                "passage_not_accessible", f"Only passages in the case language ({request.language}) are read."
            )
        return passage

    async def _calculate_refund(self, request: ToolRequest) -> dict[str, Any]:
        """The order comes from the commerce server, the rule from ``refund_rules.json`` and the policy page
        versions from this worker's knowledge base, never from the model."""
        order_id = request.arguments["order_id"]
        raw = await self.pool.call(request.applicant, "get_order", {"order_id": order_id}, case_id=request.case_id)
        try:
            order = Order.model_validate(raw)
        except ValidationError as exc:
            raise ContractError("invalid_commerce_response", "The commerce server returned a malformed order.") from exc
        versions = policy_page_versions(self.knowledge, as_of=FIXTURE_AS_OF)
        quote = calculate_refund_quote(order, as_of=FIXTURE_AS_OF, page_versions=versions)
        passages = [
            _passage_view(passage)
            for page_id in quote.citations
            for passage in self.knowledge.read_page(
                page_id, tenant=request.applicant.tenant, language=request.language, as_of=FIXTURE_AS_OF
            )
        ]
        return {"quote": quote.model_dump(mode="json"), "passages": passages}


def _check(request: ToolRequest) -> None:
    """Defensive re-validation of what the workflow already validated."""
    if PROFILES.get(request.applicant.subject) != request.applicant:
        raise AuthorizationError("identity_rejected", "The applicant is not a registered profile.")
    spec = INVESTIGATION_TOOLS.get(request.name)
    if spec is None or spec.source not in ACTIVITY_SOURCES:
        raise AuthorizationError("tool_call_rejected", f"The tool {request.name!r} may not be executed.")
    _check_arguments(spec, request.arguments)


def _check_arguments(spec: ToolSpec, arguments: dict[str, str]) -> None:
    if set(arguments) != set(spec.params):
        raise ContractError("tool_call_rejected", f"{spec.name} takes exactly the fields {sorted(spec.params)}.")
    for name, param in spec.params.items():
        value = arguments[name]
        if len(value) > param.max_length or (param.pattern and not re.fullmatch(param.pattern, value)):
            raise ContractError("tool_call_rejected", f"{spec.name}: the field {name!r} is not valid.")


def _passage_view(passage: Passage) -> dict[str, Any]:
    """Every :class:`Passage` field (the workflow rebuilds its evidence from them) plus ``title``."""
    return passage.model_dump(mode="json") | {"title": passage.page_title}
