"""What the action case tests share: the execution a case sent, and the commerce server's answer to it sent
again (a replay) and to another body under the same key (a conflict), through the real MCP client."""

from __future__ import annotations

from temporalio.client import WorkflowHandle

from activities.commerce.commerce_client import open_stdio_client
from contracts.actions import ActionExecution, ActionProposal, ActionReceipt
from contracts.case import ActionExecuteRequest
from contracts.errors import SupportError
from contracts.names import ActivityName
from contracts.payload_codec import CASE_DATA_CONVERTER
from contracts.tools import ToolName
from tests.e2e.merchant_world import Merchant


async def execution_input(handle: WorkflowHandle) -> ActionExecuteRequest:
    """The ``execute_action`` activity's input as the case's history records it."""
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == ActivityName.EXECUTE_ACTION:
                [request] = await CASE_DATA_CONVERTER.decode(attributes.input.payloads, [ActionExecuteRequest])
                return request
    raise AssertionError("no execute_action in the history")


async def replay_and_conflict(
    shop: Merchant, handle: WorkflowHandle, action: ActionProposal, customer: str = "alice"
) -> tuple[ActionReceipt, str]:
    """The case's execution sent again as the customer (the receipt, marked replay) and the same key with the
    confirmation left out (the refusal's code)."""
    sent = await execution_input(handle)
    execution = ActionExecution(
        proposal_id=action.proposal_id,
        digest=action.digest,
        idempotency_key=sent.idempotency_key,
        confirmation_token=sent.confirmation_token,
        approval_tokens=tuple(sent.approval_tokens),
    )
    async with open_stdio_client(customer, shop.state_dir) as commerce:
        again = ActionReceipt.model_validate(
            await commerce.call(ToolName.EXECUTE_ACTION, {"execution": execution.model_dump(mode="json")})
        )
        other = execution.model_copy(update={"confirmation_token": None})
        try:
            await commerce.call(ToolName.EXECUTE_ACTION, {"execution": other.model_dump(mode="json")})
        except SupportError as refused:
            return again, refused.code
    raise AssertionError("another body under the same key executed")
