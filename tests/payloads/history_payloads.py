"""Every payload of a workflow history, and the history as it would be without the case codec."""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory

from contracts.payload_codec import decode_payload_sync


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every Payload inside ``message`` (nested messages, repeated fields and maps), in place."""
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items = list(value.values())
        elif field.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            if isinstance(item, Payload):
                yield item
            elif isinstance(item, Message):
                yield from payloads_in(item)


def payloads_of(history: WorkflowHistory) -> list[Payload]:
    return [payload for event in history.events for payload in payloads_in(event)]


def decoded_history(history: WorkflowHistory) -> WorkflowHistory:
    """A copy of ``history`` with every compressed payload replaced by its original: the same case's
    history as it is without the codec (byte for byte what the worker would have written)."""
    copy = History(events=history.events)
    for event in copy.events:
        for payload in payloads_in(event):
            payload.CopyFrom(decode_payload_sync(payload))
    return WorkflowHistory(history.workflow_id, list(copy.events))
