"""What the channel asks of the cases: start a conversation, write to it, read its transcript and its
progress. :class:`Conversations` is the seam (a test hands :func:`customer_channel.build_app` its own);
:class:`TemporalConversations` is the real one, through :mod:`case_client._conversation`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from case_client import ClientErrorCode
from case_client._connection import require_worker
from case_client._conversation import (
    Progress,
    conversation,
    progress,
    send_message,
    start_conversation,
)
from contracts.case_input import CaseInput
from contracts.conversation import ConversationView, CustomerMessage, MessageAccepted, TurnReply
from contracts.errors import BusinessError, TransientError
from contracts.knowledge import Language
from contracts.names import workflow_id

QUERY_SECONDS = 10.0
"""A worker answers the transcript query in milliseconds; this long without an answer is an outage."""


class CaseNotFound(Exception):
    """No conversation by that id (or none this channel can read: a case of an earlier build)."""


class Conversations(Protocol):
    async def serving(self) -> bool:
        """Whether a worker polls the case task queue now."""

    async def start(self, case: CaseInput, *, wait_seconds: float) -> TurnReply:
        """Start ``case`` (Update-with-Start) and wait up to ``wait_seconds`` for its first reply."""

    async def send(self, case_id: str, message: CustomerMessage, *, language: Language) -> MessageAccepted:
        """Write ``message`` to the case: its acceptance, or ``MessageRefused`` with the sentence."""

    async def conversation(self, case_id: str) -> ConversationView:
        """The transcript; :class:`CaseNotFound` when there is no such case."""

    def progress(self, case_id: str, from_offset: int) -> AsyncIterator[Progress]:
        """The case's progress from ``from_offset`` on, until the case ends."""


class TemporalConversations:
    """Conversations on one Temporal namespace and task queue."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue

    async def serving(self) -> bool:
        """A worker that started a moment ago may not be listed yet: an empty queue is asked again for
        up to :data:`case_client._connection.WORKER_GRACE_SECONDS` before the channel answers 503."""
        try:
            await require_worker(self.client, self.task_queue, start_hint="python worker.py")
        except TransientError:
            return False
        return True

    async def start(self, case: CaseInput, *, wait_seconds: float) -> TurnReply:
        _, reply = await start_conversation(self.client, self.task_queue, case, wait_seconds=wait_seconds)
        return reply

    async def send(self, case_id: str, message: CustomerMessage, *, language: Language) -> MessageAccepted:
        handle = self.client.get_workflow_handle(workflow_id(case_id))
        return await send_message(handle, message, language=language)

    async def conversation(self, case_id: str) -> ConversationView:
        handle = self.client.get_workflow_handle(workflow_id(case_id))
        try:
            async with asyncio.timeout(QUERY_SECONDS):
                return await conversation(handle)
        except RPCError as error:
            if error.status is RPCStatusCode.NOT_FOUND:
                raise CaseNotFound from None
            raise TransientError(ClientErrorCode.CONVERSATION_UNREACHABLE, error.message[:200]) from None
        except BusinessError as error:  # a case of a build before conversations: no conversation here
            if error.code == ClientErrorCode.CASE_BEFORE_CONVERSATIONS:
                raise CaseNotFound from None
            raise
        except WorkflowQueryFailedError:  # a query the case's code failed
            raise CaseNotFound from None
        except TimeoutError:
            raise TransientError(
                ClientErrorCode.CONVERSATION_UNREACHABLE, f"no worker answered within {QUERY_SECONDS:.0f} s"
            ) from None

    def progress(self, case_id: str, from_offset: int) -> AsyncIterator[Progress]:
        return progress(self.client, workflow_id(case_id), from_offset=from_offset)
