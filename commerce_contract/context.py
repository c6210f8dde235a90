"""What every check shares: the target, the fixture, the keys, and what earlier checks learnt.

A check is an async function of a :class:`Run` that returns its pass reason or raises
:class:`CheckFailed` with its fail reason. The refund checks build on each other (the quote check picks
the order, the idempotency check pays it, the receipt and reuse checks read that payment); a check
whose premise failed fails too and says which check it needed. A check that the fixture gives nothing
to run with raises :class:`CheckSkipped`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent

from activities.commerce.commerce_client import tool_error_from_result
from commerce_contract.fixture import Fixture, KitKeys
from commerce_contract.target import Target
from contracts.actions import ActionExecution, ActionProposal, ActionReceipt
from contracts.commerce import Order, RefundApproval, RefundQuote, RefundReceipt
from contracts.errors import SupportError
from contracts.identity import Identity
from contracts.tools import ToolName


class CheckFailed(Exception):
    """A check's one-line fail reason."""


class CheckSkipped(Exception):
    """A check the fixture and the directory give the kit nothing to run with: its one-line reason says
    what a fixture must provide. Reported as not checked (``SKIP``), never as passed."""


def fresh_case_id() -> str:
    """A case id no earlier run used: every refund attempt of the kit is its own case."""
    return f"conformance-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Payment:
    """The refund the idempotency check paid: the approval and the receipt the server returned."""

    approval: RefundApproval
    receipt: RefundReceipt


@dataclass
class Run:
    target: Target
    fixture: Fixture
    keys: KitKeys
    customer: Identity
    order: Order | None = None
    """The refundable order the quote check picked (as it was read then)."""
    quote: RefundQuote | None = None
    """The published rule's quote of :attr:`order`."""
    payment: Payment | None = None
    """The refund the idempotency check paid."""
    action_order: Order | None = None
    """The cancellable order the action checks use (as it was read first)."""
    action: tuple[ActionProposal, ActionExecution, ActionReceipt] | None = None
    """The action the execution check executed: its proposal, the request and the receipt."""

    def quoted(self) -> tuple[Order, RefundQuote]:
        if self.order is None or self.quote is None:
            raise CheckFailed("no refundable fixture order was quoted (see quote_exactness)")
        return self.order, self.quote

    def paid(self) -> Payment:
        if self.payment is None:
            raise CheckFailed("no refund was paid (see idempotent_refund)")
        return self.payment

    async def result(self, tool: str, arguments: dict[str, Any], *, case_id: str | None = None) -> CallToolResult:
        return await self.target.call(tool, arguments, case_id=case_id or fresh_case_id())

    async def answer(self, tool: str, arguments: dict[str, Any], *, case_id: str | None = None) -> dict[str, Any]:
        """A tool's structured answer; a refusal fails the check, naming the code."""
        result = await self.result(tool, arguments, case_id=case_id)
        if result.is_error:
            error = tool_error_from_result(result)
            raise CheckFailed(f"{tool} refused: {error.code}: {error.message}")
        if result.structured_content is None:
            raise CheckFailed(f"{tool} answered without structured content")
        return result.structured_content

    async def refusal(self, tool: str, arguments: dict[str, Any], *, case_id: str | None = None) -> SupportError:
        """The typed refusal of a call that must be refused; an answer fails the check."""
        result = await self.result(tool, arguments, case_id=case_id)
        if not result.is_error:
            raise CheckFailed(f"{tool} answered instead of refusing: {text_of(result)[:160]}")
        return tool_error_from_result(result)

    async def read_order(self, order_id: str) -> Order:
        return Order.model_validate(await self.answer(ToolName.GET_ORDER, {"order_id": order_id}))


def text_of(result: CallToolResult) -> str:
    """The text of a result's content, as the server sent it (no parsing, no normalising)."""
    return "".join(block.text for block in result.content if isinstance(block, TextContent))
