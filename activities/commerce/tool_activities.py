"""The investigation tools the model may request, executed for one applicant.

The workflow has already validated every call (known tool, exact fields, bound order id). This
activity checks again, because it is the side that performs I/O: a request it cannot trust fails
as a non-retryable ``authorization`` or ``contract`` error instead of being executed.
Host-injected values (identity, tenant, language, the fixture as-of date) never come from the model.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from temporalio import activity

from activities.case.preferences import LanguagePreferences
from activities.commerce.commerce_sessions import CommerceGateway
from activities.runtime.activity_metrics import counted_tool_call
from contracts.commerce import FIXTURE_AS_OF, Order
from contracts.errors import (
    AuthorizationError,
    CommerceErrorCode,
    ConfigurationError,
    ContractError,
    SupportError,
    TransientError,
    WorkerErrorCode,
)
from contracts.knowledge import Passage
from contracts.logs import log_fields
from contracts.model_io import ToolObservation, ToolRequest
from contracts.names import ActivityName
from contracts.tools import (
    INVESTIGATION_TOOLS,
    LanguagePreferenceResult,
    PassageView,
    RefundQuoteResult,
    ScoredPassage,
    SearchResult,
    SkillResult,
    ToolName,
    ToolSource,
    ToolSpec,
)
from keystore import directory_location
from keystore.directory_file import DirectorySource
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.skills import load_skill
from knowledge.store import KnowledgeBase

ACTIVITY_SOURCES = frozenset({ToolSource.MCP, ToolSource.KNOWLEDGE})
"""Tools with another source (``case``: save_case_note) live in workflow state, never here."""

MAX_ERROR_MESSAGE_CHARS = 300

ToolHandler = Callable[[ToolRequest], Awaitable[BaseModel]]
"""Runs one checked request of one tool and returns its typed result."""


class ToolActivities:
    """The tool activity and what it reads through: the commerce gateway, the knowledge base, preferences.

    Refusals the model should learn from (a foreign order, an unknown skill, an inapplicable passage)
    come back as ``ToolObservation(ok=False, ...)`` with the refusal's stable code and message only.
    Transient failures are raised so that Temporal retries the activity on a fresh commerce session;
    configuration faults (a commerce server refusing this worker's token) are raised so that the case
    fails with the reason, never reaching the model as if the order did not exist.
    """

    def __init__(
        self,
        pool: CommerceGateway,
        knowledge: KnowledgeBase,
        preferences: LanguagePreferences,
        directory: DirectorySource | None = None,
    ) -> None:
        self.pool = pool
        self.knowledge = knowledge
        self.directory = directory or DirectorySource(directory_location(preferences.path.parent))
        """The worker's copy of the directory: every request is for a person it lists, exactly, and it
        says which tenant's policies each tenant follows."""
        self.preferences = preferences
        self._handlers: dict[ToolName, ToolHandler] = {
            ToolName.SEARCH_KNOWLEDGE: self._search_knowledge,
            ToolName.READ_KNOWLEDGE: self._read_knowledge,
            ToolName.LOAD_SKILL: self._load_skill,
            ToolName.CALCULATE_REFUND: self._calculate_refund,
            ToolName.GET_LANGUAGE_PREFERENCE: self._get_language_preference,
        }
        """The tools this worker answers itself, by name; commerce reads go to the commerce server."""

    @activity.defn(name=ActivityName.RUN_INVESTIGATION_TOOL)
    @counted_tool_call
    async def run_investigation_tool(self, request: ToolRequest) -> ToolObservation:
        self.directory.current().check_listed(request.applicant)
        _check(request)
        try:
            result = await self.dispatch(request)
        except (TransientError, ConfigurationError):
            raise  # retried, or the case fails with the reason: never shown to the model as an answer
        except SupportError as error:
            fields = log_fields(case_id=request.case_id, code=error.code, tool=str(request.name))
            activity.logger.info("%s for case %s refused: %s", request.name, request.case_id, error.code, extra=fields)
            return ToolObservation(
                call_id=request.call_id,
                name=request.name,
                ok=False,
                error_code=error.code,
                error_message=error.message[:MAX_ERROR_MESSAGE_CHARS],
            )
        return ToolObservation(call_id=request.call_id, name=request.name, ok=True, result=result)

    async def dispatch(self, request: ToolRequest) -> dict[str, Any]:
        """Run one checked request; typed refusals propagate as :class:`SupportError`.

        A commerce read's result is passed on as the commerce server sent it (the server checks it
        against the tool's result model); the others are built as their typed result and sent as JSON."""
        spec = INVESTIGATION_TOOLS[request.name]
        if spec.source is ToolSource.MCP:
            return await self.pool.call(request.applicant, spec.name, dict(request.arguments), case_id=request.case_id)
        handler = self._handlers.get(spec.name)
        if handler is None:
            raise AuthorizationError(
                CommerceErrorCode.TOOL_CALL_REJECTED, f"The tool {request.name!r} is not executed here."
            )
        result = await handler(request)
        return result.model_dump(mode="json")

    def _policy_tenant(self, request: ToolRequest) -> str:
        """The tenant whose policy documents and refund rule the applicant's tenant follows."""
        return self.directory.current().policy_tenant(request.applicant.tenant)

    async def _search_knowledge(self, request: ToolRequest) -> SearchResult:
        hits = self.knowledge.search(
            request.arguments["query"],
            tenant=self._policy_tenant(request),
            language=request.language,
            as_of=FIXTURE_AS_OF,
        )
        return SearchResult(
            passages=[ScoredPassage(**dict(PassageView.of(hit.passage)), score=round(hit.score, 4)) for hit in hits]
        )

    async def _read_knowledge(self, request: ToolRequest) -> PassageView:
        return PassageView.of(self._read_passage(request))

    async def _load_skill(self, request: ToolRequest) -> SkillResult:
        name = request.arguments["name"]
        return SkillResult(name=name, body=load_skill(name, request.language))

    async def _get_language_preference(self, request: ToolRequest) -> LanguagePreferenceResult:
        return LanguagePreferenceResult(language=self.preferences.get(request.applicant.subject))

    def _read_passage(self, request: ToolRequest) -> Passage:
        """A read by id applies the search rule too: the case's tenant, date and language only."""
        passage = self.knowledge.read_passage(
            request.arguments["passage_id"], tenant=self._policy_tenant(request), as_of=FIXTURE_AS_OF
        )
        if passage.language is not request.language:
            raise AuthorizationError(
                WorkerErrorCode.PASSAGE_NOT_ACCESSIBLE,
                f"Only passages in the case language ({request.language}) are read.",
            )
        return passage

    async def _calculate_refund(self, request: ToolRequest) -> RefundQuoteResult:
        """The order comes from the commerce server, the rule (the policy tenant's, ``knowledge.refund_quote``)
        and the policy page versions from this worker's knowledge base, never from the model."""
        order_id = request.arguments["order_id"]
        raw = await self.pool.call(
            request.applicant, ToolName.GET_ORDER, {"order_id": order_id}, case_id=request.case_id
        )
        try:
            order = Order.model_validate(raw)
        except ValidationError as exc:
            raise ContractError(
                WorkerErrorCode.INVALID_COMMERCE_RESPONSE, "The commerce server returned a malformed order."
            ) from exc
        follows = self._policy_tenant(request)
        versions = policy_page_versions(self.knowledge, as_of=FIXTURE_AS_OF, tenant=follows)
        quote = calculate_refund_quote(order, as_of=FIXTURE_AS_OF, page_versions=versions, policy_tenant=follows)
        passages = [
            PassageView.of(passage)
            for page_id in quote.citations
            for passage in self.knowledge.read_page(
                page_id, tenant=self._policy_tenant(request), language=request.language, as_of=FIXTURE_AS_OF
            )
        ]
        return RefundQuoteResult(quote=quote, passages=passages)


def _check(request: ToolRequest) -> None:
    """Defensive re-validation of what the workflow already validated (the applicant is checked against
    the directory just before, and again by the commerce gateway on every commerce call)."""
    spec = INVESTIGATION_TOOLS.get(request.name)
    if spec is None or spec.source not in ACTIVITY_SOURCES:
        raise AuthorizationError(
            CommerceErrorCode.TOOL_CALL_REJECTED, f"The tool {request.name!r} may not be executed."
        )
    _check_arguments(spec, request.arguments)


def _check_arguments(spec: ToolSpec, arguments: dict[str, str]) -> None:
    if set(arguments) != set(spec.params):
        raise ContractError(
            CommerceErrorCode.TOOL_CALL_REJECTED, f"{spec.name} takes exactly the fields {sorted(spec.params)}."
        )
    for name, param in spec.params.items():
        value = arguments[name]
        if len(value) > param.max_length or (param.pattern and not re.fullmatch(param.pattern, value)):
            raise ContractError(CommerceErrorCode.TOOL_CALL_REJECTED, f"{spec.name}: the field {name!r} is not valid.")
