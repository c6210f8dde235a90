"""A message sent to a case whose workflow closed, or closed while the message was on its way (the
update never ran), is refused as a closed conversation, never reported as a case that cannot be reached."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from case_client._conversation import MessageRefused, send_message, workflow_closed
from contracts.conversation import CustomerMessage, MessageRefusal
from contracts.errors import TransientError


class _Closing:
    """A handle whose update the Temporal server answers with ``message``."""

    id = "case-c1"

    def __init__(self, message: str) -> None:
        self._message = message

    async def execute_update(self, *_args: Any, **_kwargs: Any) -> Any:
        raise RPCError(self._message, RPCStatusCode.NOT_FOUND, b"")


MESSAGE = CustomerMessage(text="any news?", token="t" * 20, message_id="m-000001")


@pytest.mark.parametrize(
    "answer", ["workflow execution already completed", "workflow update was aborted by closing workflow"]
)
async def test_a_message_to_a_closed_or_closing_case_is_refused_as_closed(answer: str) -> None:
    handle: WorkflowHandle = _Closing(answer)  # type: ignore[assignment]

    with pytest.raises(MessageRefused) as refused:
        await send_message(handle, MESSAGE)

    assert workflow_closed(RPCError(answer, RPCStatusCode.NOT_FOUND, b""))
    assert refused.value.refusal is MessageRefusal.CASE_CLOSED
    assert refused.value.message == "This conversation is closed. Please start a new one."


async def test_any_other_answer_is_a_case_that_cannot_be_reached_now() -> None:
    handle: WorkflowHandle = _Closing("connection reset")  # type: ignore[assignment]

    with pytest.raises(TransientError) as unreachable:
        await send_message(handle, MESSAGE)

    assert unreachable.value.code == "conversation_unreachable"
