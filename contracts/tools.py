"""The tool catalogue: every tool a case can call, named once, with its scope and its result model.

The model may request the read-only tools (:data:`INVESTIGATION_TOOLS`); the workflow validates every
requested call against these specs before anything is scheduled, and the model adapter turns the same
specs into OpenAI function-tool schemas. The write tools (:data:`WRITE_TOOLS`) are the commerce
server's, called only by the worker's own activities: never offered to the model, always refused if
requested. Host-injected values (identity, tenant, language, as-of date) are never parameters here.

Each spec names the bearer-token scope the commerce server requires for it (commerce tools only), and
the pydantic model of a successful result. On the wire (activity results, carried facts) a result stays
the JSON object the tool returned; readers parse it into the model (``CaseFacts.typed``).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from contracts.actions import ActionProposal, ActionReceipt
from contracts.commerce import (
    ORDER_ID_SCHEMA_PATTERN,
    Invoice,
    Order,
    OrderList,
    Product,
    ProposalClosed,
    RefundQuote,
    RefundReceipt,
    Shipment,
    Ticket,
)
from contracts.knowledge import Language, Passage

MAX_ARGUMENT_CHARS = 1500
MAX_CASE_NOTES = 5
"""How many working notes the model may save in one case (``save_case_note``'s declared cap)."""


class ToolName(StrEnum):
    """Every tool's name, as the model, the workflow, the activities and the commerce server spell it."""

    LIST_ORDERS = "list_orders"
    GET_ORDER = "get_order"
    GET_SHIPMENT = "get_shipment"
    GET_INVOICE = "get_invoice"
    GET_PRODUCT = "get_product"
    GET_TICKET = "get_ticket"
    SEARCH_KNOWLEDGE = "search_knowledge"
    READ_KNOWLEDGE = "read_knowledge"
    LOAD_SKILL = "load_skill"
    CALCULATE_REFUND = "calculate_refund"
    GET_LANGUAGE_PREFERENCE = "get_language_preference"
    SAVE_CASE_NOTE = "save_case_note"
    CREATE_TICKET = "create_ticket"
    EXECUTE_REFUND = "execute_refund"
    CLOSE_REFUND_PROPOSAL = "close_refund_proposal"
    PREVIEW_ACTION = "preview_action"
    EXECUTE_ACTION = "execute_action"
    CLOSE_ACTION_PROPOSAL = "close_action_proposal"


class ToolSource(StrEnum):
    """Where a call goes."""

    MCP = "mcp"
    """The commerce MCP server."""
    KNOWLEDGE = "knowledge"
    """This worker's knowledge base, refund rule and preferences."""
    CASE = "case"
    """The workflow's own state (no activity)."""


class Scope(StrEnum):
    """The scopes of a commerce bearer token; each commerce tool needs exactly one."""

    ORDERS_READ = "orders:read"
    TICKETS_WRITE = "tickets:write"
    REFUND_EXECUTE = "refund:execute"
    ACTIONS_WRITE = "actions:write"


class FactKey(StrEnum):
    """The key under which a case's facts keep a tool's successful result (see :mod:`contracts.case_facts`)."""

    ORDERS = "list_orders"
    ORDER = "order"
    SHIPMENT = "shipment"
    INVOICE = "invoice"
    PRODUCT = "product"
    TICKET = "ticket"
    QUOTE = "quote"
    """The ``quote`` of a ``calculate_refund`` result (not the whole result)."""
    LANGUAGE_PREFERENCE = "language_preference"


# --- the results of the tools that are not the commerce server's ---------------------------------


class _Frozen(BaseModel):
    """Every tool contract here is immutable and refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class PassageView(Passage):
    """A passage as a tool returns it: every :class:`Passage` field (the workflow rebuilds its evidence
    from them) and ``title``."""

    title: str

    @classmethod
    def of(cls, passage: Passage) -> PassageView:
        return cls(**dict(passage), title=passage.page_title)


class ScoredPassage(PassageView):
    """One search hit: the passage and its BM25 score (rounded to four decimals)."""

    score: float


class SearchResult(_Frozen):
    passages: list[ScoredPassage]


class SkillResult(_Frozen):
    name: str
    body: str


class RefundQuoteResult(_Frozen):
    """The exact automatic quote and the passages of the policy pages it rests on."""

    quote: RefundQuote
    passages: list[PassageView]


class LanguagePreferenceResult(_Frozen):
    language: Language | None
    """The customer's consented reply language, None when there is none."""


class CaseNoteSaved(_Frozen):
    saved: bool


# --- the specs -----------------------------------------------------------------------------------


class ParamSpec(_Frozen):
    description: str
    pattern: str | None = None
    """Anchored, and sent to the model in the tool schema: only constructs every grammar engine takes
    (``[0-9]``, never ``\\d``, which llama.cpp mistranslates), and every repetition bounded (``{1,n}``,
    never ``+`` or ``*``), each bound no more than ``max_length`` allows, so that the pattern matches the
    same strings of at most ``max_length`` characters as its unbounded form. A grammar engine that takes a
    pattern drops the ``maxLength`` beside it (llama-cpp-python's and llama.cpp's converters both do), so
    an unbounded run would be an argument without end: with ``tool_choice: auto`` llama-cpp-python 0.3.36
    also ignores ``max_tokens``, and Gemma 3 270M wrote one tool call's arguments for over six minutes
    (make compat's lamp-warranty case, 2026-12-05)."""
    max_length: int = MAX_ARGUMENT_CHARS


class ToolSpec(_Frozen):
    name: ToolName
    description: str
    params: dict[str, ParamSpec]
    """The string fields the model fills (write tools, never offered to the model, list none here)."""
    source: ToolSource
    result: type[BaseModel]
    """The model of a successful result."""
    scope: Scope | None = None
    """The scope a commerce bearer token must grant for this tool (commerce tools only)."""
    read_only: bool = True
    """A read: the model may request it. Commerce writes are the worker's own calls, never the model's."""
    case_write_cap: int | None = None
    """A write the model may make, declared: kept in the case's own state (nothing outside the case
    changes), auto-allowed up to this many per case and refused beyond (``case_write_cap_reached``)."""
    fact: FactKey | None = None
    """Where a case's facts keep a successful result (None: the result is no fact)."""

    def openai_schema(self) -> dict:
        properties = {
            name: {"type": "string", "description": spec.description, "maxLength": spec.max_length}
            | ({"pattern": spec.pattern} if spec.pattern else {})
            for name, spec in self.params.items()
        }
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": sorted(self.params),
                    "additionalProperties": False,
                },
            },
        }


ORDER_ID = ParamSpec(
    description="An order id exactly as written in the question, e.g. QH-1001.",
    pattern=ORDER_ID_SCHEMA_PATTERN,
    max_length=7,
)


def _commerce_read(
    name: ToolName, result: type[BaseModel], fact: FactKey, description: str, **params: ParamSpec
) -> ToolSpec:
    return ToolSpec(
        name=name,
        source=ToolSource.MCP,
        scope=Scope.ORDERS_READ,
        result=result,
        fact=fact,
        params=params,
        description=description,
    )


def _commerce_write(name: ToolName, result: type[BaseModel], scope: Scope, description: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        source=ToolSource.MCP,
        scope=scope,
        result=result,
        read_only=False,
        params={},
        description=description,
    )


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        _commerce_read(
            ToolName.LIST_ORDERS, OrderList, FactKey.ORDERS, "List the signed-in customer's own orders (summaries)."
        ),
        _commerce_read(
            ToolName.GET_ORDER,
            Order,
            FactKey.ORDER,
            "Read one of the customer's orders: status, amounts in cents, delivery, version.",
            order_id=ORDER_ID,
        ),
        _commerce_read(
            ToolName.GET_SHIPMENT,
            Shipment,
            FactKey.SHIPMENT,
            "Read the shipment record of one order: carrier, tracking number, events.",
            order_id=ORDER_ID,
        ),
        _commerce_read(
            ToolName.GET_INVOICE,
            Invoice,
            FactKey.INVOICE,
            "Read the invoice of one order: item amount, delivery charge, total, state.",
            order_id=ORDER_ID,
        ),
        _commerce_read(
            ToolName.GET_PRODUCT,
            Product,
            FactKey.PRODUCT,
            "Read a product: name, category, warranty months.",
            sku=ParamSpec(description="Product SKU, e.g. LAMP-02.", pattern=r"^[A-Z]{1,9}-[0-9]{2}$", max_length=12),
        ),
        _commerce_read(
            ToolName.GET_TICKET,
            Ticket,
            FactKey.TICKET,
            "Read one of the customer's support tickets.",
            ticket_id=ParamSpec(description="Ticket id, e.g. T-0123abcd.", max_length=40),
        ),
        ToolSpec(
            name=ToolName.SEARCH_KNOWLEDGE,
            source=ToolSource.KNOWLEDGE,
            result=SearchResult,
            params={"query": ParamSpec(description="What to look for in the policy pages.", max_length=300)},
            description="Search the applicable policy pages (BM25, at most 4 passages).",
        ),
        ToolSpec(
            name=ToolName.READ_KNOWLEDGE,
            source=ToolSource.KNOWLEDGE,
            result=PassageView,
            params={
                "passage_id": ParamSpec(
                    description="A passage id such as RETURNS:p02:en:0.",
                    pattern=r"^[A-Z_]{1,31}:p[0-9]{2}:(en|zh):[0-9]{1,31}$",
                    max_length=40,
                )
            },
            description="Read one applicable policy passage by id.",
        ),
        ToolSpec(
            name=ToolName.LOAD_SKILL,
            source=ToolSource.KNOWLEDGE,
            result=SkillResult,
            params={
                "name": ParamSpec(
                    description="Skill name: refund, delivery, invoice, warranty, policy.",
                    pattern=r"^[a-z]{1,20}$",
                    max_length=20,
                )
            },
            description="Load a procedure (it describes steps; it grants no permission).",
        ),
        ToolSpec(
            name=ToolName.CALCULATE_REFUND,
            source=ToolSource.KNOWLEDGE,
            result=RefundQuoteResult,
            fact=FactKey.QUOTE,
            params={"order_id": ORDER_ID},
            description="Compute the exact automatic refund quote for the order with the executable "
            "rule, and return the two policy pages it rests on.",
        ),
        ToolSpec(
            name=ToolName.GET_LANGUAGE_PREFERENCE,
            source=ToolSource.KNOWLEDGE,
            result=LanguagePreferenceResult,
            fact=FactKey.LANGUAGE_PREFERENCE,
            params={},
            description="Read the customer's consented reply-language preference, if any.",
        ),
        ToolSpec(
            name=ToolName.SAVE_CASE_NOTE,
            source=ToolSource.CASE,
            result=CaseNoteSaved,
            params={"note": ParamSpec(description="A short working note kept with this case only.", max_length=500)},
            description=(
                f"Save a short working note in this case (not memory, not a ticket); at most {MAX_CASE_NOTES} per case."
            ),
            read_only=False,
            case_write_cap=MAX_CASE_NOTES,
        ),
        _commerce_write(
            ToolName.CREATE_TICKET,
            Ticket,
            Scope.TICKETS_WRITE,
            "Open a support ticket on one of the customer's orders, at most once per idempotency key.",
        ),
        _commerce_write(
            ToolName.EXECUTE_REFUND,
            RefundReceipt,
            Scope.REFUND_EXECUTE,
            "Pay a human-approved refund proposal (simulated), exactly once per approval id.",
        ),
        _commerce_write(
            ToolName.CLOSE_REFUND_PROPOSAL,
            ProposalClosed,
            Scope.REFUND_EXECUTE,
            "Record that a case's refund proposal was rejected or expired.",
        ),
        _commerce_write(
            ToolName.PREVIEW_ACTION,
            ActionProposal,
            Scope.ACTIONS_WRITE,
            "Compute the exact effect of an action the tenant's policy allows, as a proposal with a digest.",
        ),
        _commerce_write(
            ToolName.EXECUTE_ACTION,
            ActionReceipt,
            Scope.ACTIONS_WRITE,
            "Execute an agreed action proposal once, and return its signed receipt.",
        ),
        _commerce_write(
            ToolName.CLOSE_ACTION_PROPOSAL,
            ProposalClosed,
            Scope.ACTIONS_WRITE,
            "Record that a case's action proposal was rejected, expired or withdrawn: it never executes.",
        ),
    ]
}
"""The catalogue by :class:`ToolName` (a ``str``, so a name read from a request finds its spec), in the
order the model is offered the read-only tools."""

INVESTIGATION_TOOLS: dict[str, ToolSpec] = {
    name: spec for name, spec in TOOLS.items() if spec.read_only or spec.case_write_cap is not None
}
"""The twelve tools the model may request: the reads and the one declared case write (``save_case_note``)."""

WRITE_TOOLS = frozenset(name for name, spec in TOOLS.items() if not spec.read_only and spec.case_write_cap is None)
"""Commerce writes: never offered to the model, always refused if requested. Every one is a proposal under
the tenant's policy, made and executed by the workflow's own code (refunds, actions) or the worker's."""

COMMERCE_TOOLS: dict[str, ToolSpec] = {name: spec for name, spec in TOOLS.items() if spec.source is ToolSource.MCP}
"""The commerce server's tools (reads first, then writes): the ones a bearer token scopes."""
