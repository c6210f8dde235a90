"""The customer's side of a conversation: start one, write again, wait for a reply, watch progress.

The first message starts the case with Update-with-Start: the start input carries the message as the
case's question, and the ``reply`` update waits a short while for the answer, so one round trip
returns the case id and, when it is quick, the first reply. Every further message is the ``message``
update, signed by the customer's own credential; a refusal arrives as :class:`MessageRefused` with the
sentence the customer reads. Progress is the case's workflow stream, read from an offset.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from case_client._codes import ClientErrorCode
from case_client._following import CaseClosed
from case_client._rules import start_search_attributes, static_details, static_summary
from contracts.case import CaseStatus, CaseView
from contracts.case_input import CaseInput
from contracts.conversation import (
    CONVERSATION,
    MESSAGE,
    PROGRESS_TOPIC,
    REPLY,
    ConversationView,
    CustomerMessage,
    MessageAccepted,
    MessageRefusal,
    ProgressItem,
    ReplyWait,
    TurnReply,
    refusal_sentence,
)
from contracts.errors import BusinessError, TransientError
from contracts.knowledge import Language
from contracts.names import MESSAGE_REFUSED, WORKFLOW_NAME, case_id_of, workflow_id


class MessageRefused(BusinessError):
    """A message the case did not take; ``refusal`` is why and ``str()`` the customer's sentence."""

    def __init__(self, refusal: MessageRefusal, sentence: str) -> None:
        super().__init__(ClientErrorCode.MESSAGE_REFUSED, sentence)
        self.refusal = refusal


@dataclass(frozen=True)
class Progress:
    """One progress item and its offset in the case's stream (resume from ``offset + 1``)."""

    offset: int
    item: ProgressItem


def new_message_id() -> str:
    return secrets.token_urlsafe(12)


async def start_conversation(
    temporal: Client, task_queue: str, case: CaseInput, *, wait_seconds: float = 10.0
) -> tuple[WorkflowHandle, TurnReply]:
    """Start ``case`` (its question is the first message) and wait up to ``wait_seconds`` for the first
    reply. Sent again with the same case id, it attaches to the case already running instead of
    starting a second one; a different question under that id is ``request_key_reused``."""
    operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        WORKFLOW_NAME,
        case,
        id=workflow_id(case.case_id),
        task_queue=task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        memo={"applicant": case.applicant.subject, "fictional": True},
        search_attributes=start_search_attributes(case),
        static_summary=static_summary(case),
        static_details=static_details(case),
    )
    try:
        reply = await temporal.execute_update_with_start_workflow(
            REPLY,
            ReplyWait(turn=1, wait_seconds=wait_seconds),
            start_workflow_operation=operation,
            result_type=TurnReply,
        )
    except WorkflowUpdateFailedError as error:
        raise _refused(error, case.language) from None
    except RPCError as error:
        raise TransientError(
            ClientErrorCode.CONVERSATION_NOT_STARTED, f"case {case.case_id} could not start: {error.message}"
        ) from None
    handle = await operation.workflow_handle()
    return handle, reply


async def send_message(
    handle: WorkflowHandle, message: CustomerMessage, *, language: Language = Language.EN
) -> MessageAccepted:
    """Write ``message`` to the case: its acceptance, or :class:`MessageRefused` with the sentence."""
    try:
        return await handle.execute_update(MESSAGE, message, result_type=MessageAccepted)
    except WorkflowUpdateFailedError as error:
        raise _refused(error, language, case_id_of(handle.id)) from None
    except RPCError as error:
        if workflow_closed(error):
            refusal = MessageRefusal.CASE_CLOSED
            raise MessageRefused(refusal, refusal_sentence(refusal, language)) from None
        raise TransientError(
            ClientErrorCode.CONVERSATION_UNREACHABLE, f"case {handle.id} cannot take a message: {error.message}"
        ) from None


async def wait_reply(handle: WorkflowHandle, turn: int, *, wait_seconds: float = 10.0) -> TurnReply:
    """The reply to message ``turn`` once it exists, or after ``wait_seconds`` the case as it is."""
    return await handle.execute_update(REPLY, ReplyWait(turn=turn, wait_seconds=wait_seconds), result_type=TurnReply)


async def reply_unless_closed(handle: WorkflowHandle, turn: int, *, wait_seconds: float = 10.0) -> TurnReply:
    """:func:`wait_reply`, or :class:`~case_client._following.CaseClosed` once the case's workflow has
    closed (or has refused its input: nothing more is replied)."""
    try:
        return await wait_reply(handle, turn, wait_seconds=wait_seconds)
    except RPCError as error:
        if workflow_closed(error):
            raise CaseClosed(case_id_of(handle.id)) from None
        raise
    except WorkflowUpdateFailedError as error:
        if refusal_of(error) is MessageRefusal.CASE_CLOSED:
            raise CaseClosed(case_id_of(handle.id)) from None
        raise


async def conversation(handle: WorkflowHandle) -> ConversationView:
    try:
        return await handle.query(CONVERSATION, result_type=ConversationView)
    except WorkflowQueryFailedError as error:
        if _handler_missing(str(error), "Query", CONVERSATION):
            raise before_conversations(case_id_of(handle.id)) from None
        raise


def before_conversations(case_id: str) -> BusinessError:
    """A case started on a build before release 0.11 has no conversation: no message reaches it."""
    return BusinessError(
        ClientErrorCode.CASE_BEFORE_CONVERSATIONS,
        f"case {case_id} was started on a release before conversations (0.10 or earlier): it takes no "
        "further messages and has no transcript; its status and reviews work as before. Start a new "
        "conversation to write.",
    )


def _handler_missing(message: str, kind: str, name: str) -> bool:
    """Whether a failure is the SDK's answer for a handler the case's build does not have."""
    return f"{kind} handler for '{name}' expected but not found" in message


async def progress(temporal: Client, case_workflow_id: str, *, from_offset: int = 0) -> AsyncIterator[Progress]:
    """The case's progress from ``from_offset`` on, following continue-as-new, until the case ends."""
    stream = WorkflowStreamClient.create(temporal, case_workflow_id)
    async for entry in stream.subscribe([PROGRESS_TOPIC], from_offset, result_type=ProgressItem):
        yield Progress(offset=entry.offset, item=entry.data)


async def progress_offset(temporal: Client, case_workflow_id: str) -> int:
    """The progress stream's length now: a reader from here on sees only what comes next."""
    return await WorkflowStreamClient.create(temporal, case_workflow_id).get_offset()


CLOSED_WORKFLOW_ANSWERS = (
    "workflow execution already completed",
    "workflow update was aborted by closing workflow",
)
"""What the Temporal server answers an update sent to a closed workflow, or to one that closed while the
update was on its way (the update never ran: the message was not taken)."""


def workflow_closed(error: RPCError) -> bool:
    """Whether ``error`` says the case's workflow has closed (an update can no longer reach it)."""
    said = error.message.lower()
    return any(answer in said for answer in CLOSED_WORKFLOW_ANSWERS)


def refusal_of(error: WorkflowUpdateFailedError) -> MessageRefusal | None:
    """The case's refusal in ``error`` (an update it refused), or None when it is another failure."""
    refused = _refused(error, Language.EN)
    return refused.refusal if isinstance(refused, MessageRefused) else None


def _refused(error: WorkflowUpdateFailedError, language: Language, case_id: str = "") -> BusinessError:
    cause = error.cause
    if cause is not None and _handler_missing(str(cause), "Update", MESSAGE):
        return before_conversations(case_id)
    if isinstance(cause, ApplicationError) and cause.type == MESSAGE_REFUSED:
        details = cause.details[0] if cause.details else None
        code = details.get("code") if isinstance(details, dict) else None
        known = {refusal.value: refusal for refusal in MessageRefusal}
        refusal = known.get(code, MessageRefusal.MALFORMED) if isinstance(code, str) else MessageRefusal.MALFORMED
        return MessageRefused(refusal, cause.message)
    reason = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
    return BusinessError(ClientErrorCode.CONVERSATION_REFUSED, reason[:300])


def awaited_confirmation(view: CaseView) -> str | None:
    """The digest of the action proposal that waits for its customer's confirmation in ``view`` (None:
    none does). The customer's sign-in signs a confirmation over exactly this digest, and only once the
    customer said yes to the proposal they were shown."""
    action = view.action
    if view.status is not CaseStatus.WAITING_APPROVAL or action is None or view.digest != action.digest:
        return None
    return action.digest if action.requires.customer and view.confirmed_by is None else None
