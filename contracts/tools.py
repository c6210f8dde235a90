"""The twelve investigation tools the model may request, described once.

The workflow validates every requested call against these specs before anything is scheduled; the
model adapter turns the same specs into OpenAI function-tool schemas. Host-injected values
(identity, tenant, language, as-of date) are never parameters here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contracts.commerce import ORDER_ID_SCHEMA_PATTERN

MAX_ARGUMENT_CHARS = 1500


class ParamSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str
    pattern: str | None = None
    """Anchored, and sent to the model in the tool schema: only constructs every grammar engine takes
    (``[0-9]``, never ``\\d``, which llama.cpp mistranslates)."""
    max_length: int = MAX_ARGUMENT_CHARS


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    params: dict[str, ParamSpec]
    source: str
    """Where the call goes: ``mcp`` (commerce server read), ``knowledge``, or ``case`` (workflow state)."""

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

INVESTIGATION_TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec(
            name="list_orders",
            source="mcp",
            params={},
            description="List the signed-in customer's own orders (summaries).",
        ),
        ToolSpec(
            name="get_order",
            source="mcp",
            params={"order_id": ORDER_ID},
            description="Read one of the customer's orders: status, amounts in cents, delivery, version.",
        ),
        ToolSpec(
            name="get_shipment",
            source="mcp",
            params={"order_id": ORDER_ID},
            description="Read the shipment record of one order: carrier, tracking number, events.",
        ),
        ToolSpec(
            name="get_invoice",
            source="mcp",
            params={"order_id": ORDER_ID},
            description="Read the invoice of one order: item amount, delivery charge, total, state.",
        ),
        ToolSpec(
            name="get_product",
            source="mcp",
            params={
                "sku": ParamSpec(description="Product SKU, e.g. LAMP-02.", pattern=r"^[A-Z]+-[0-9]{2}$", max_length=12)
            },
            description="Read a product: name, category, warranty months.",
        ),
        ToolSpec(
            name="get_ticket",
            source="mcp",
            params={"ticket_id": ParamSpec(description="Ticket id, e.g. T-0123abcd.", max_length=40)},
            description="Read one of the customer's support tickets.",
        ),
        ToolSpec(
            name="search_knowledge",
            source="knowledge",
            params={"query": ParamSpec(description="What to look for in the policy pages.", max_length=300)},
            description="Search the applicable policy pages (BM25, at most 4 passages).",
        ),
        ToolSpec(
            name="read_knowledge",
            source="knowledge",
            params={
                "passage_id": ParamSpec(
                    description="A passage id such as RETURNS:p02:en:0.",
                    pattern=r"^[A-Z_]+:p[0-9]{2}:(en|zh):[0-9]+$",
                    max_length=40,
                )
            },
            description="Read one applicable policy passage by id.",
        ),
        ToolSpec(
            name="load_skill",
            source="knowledge",
            params={
                "name": ParamSpec(
                    description="Skill name: refund, delivery, invoice, warranty, policy.",
                    pattern=r"^[a-z]+$",
                    max_length=20,
                )
            },
            description="Load a procedure (it describes steps; it grants no permission).",
        ),
        ToolSpec(
            name="calculate_refund",
            source="knowledge",
            params={"order_id": ORDER_ID},
            description="Compute the exact automatic refund quote for the order with the executable "
            "rule, and return the two policy pages it rests on.",
        ),
        ToolSpec(
            name="get_language_preference",
            source="knowledge",
            params={},
            description="Read the customer's consented reply-language preference, if any.",
        ),
        ToolSpec(
            name="save_case_note",
            source="case",
            params={"note": ParamSpec(description="A short working note kept with this case only.", max_length=500)},
            description="Save a short working note in this case (not memory, not a ticket).",
        ),
    ]
}

WRITE_TOOLS = frozenset({"execute_refund", "create_ticket", "close_refund_proposal"})
"""Commerce writes: never offered to the model, always refused if requested."""
