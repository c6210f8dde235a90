"""``GET /v1/conversations/{case_id}/events``: the case's progress as Server-Sent Events.

Each item of the case's progress stream (:func:`case_client._conversation.progress`) is one event::

    id: <offset>
    event: progress
    data: <ProgressItem as JSON>

A client that lost the connection sends the last id it saw as ``Last-Event-ID`` and reads on from the
next offset, so no item is lost or repeated. While nothing happens a comment (``: keep-alive``) goes
out every few seconds; when the case has ended, ``event: end`` (its final status) closes the stream.
If the case cannot be read mid-stream, ``event: unavailable`` says so in a sentence and the stream
closes; the client reconnects with its ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from case_client._conversation import Progress
from contracts.case_status import CaseStatus
from contracts.conversation import MessageRefusal
from contracts.errors import SupportError
from contracts.knowledge import Language
from customer_channel.api import case_id_of, own_conversation
from customer_channel.channel import LOG, Channel, answering, channel_of, language_of, message_refusal
from customer_channel.words import ChannelRefusal, sentence

EVENT_STREAM = "text/event-stream; charset=utf-8"
RETRY_MILLISECONDS = 3000
"""What a client waits before it reconnects (the ``retry:`` field)."""
QUEUED_ITEMS = 64


def progress_event(entry: Progress) -> str:
    return f"id: {entry.offset}\nevent: progress\ndata: {entry.item.model_dump_json()}\n\n"


def named_event(name: str, data: dict[str, object]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def resume_offset(last_event_id: str | None) -> int | None:
    """The offset after ``Last-Event-ID`` (0 without one); None when it is not an offset."""
    if last_event_id is None or not last_event_id.strip():
        return 0
    text = last_event_id.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        return None
    return int(text) + 1


@answering
async def progress_events(request: Request) -> Response:
    channel = channel_of(request)
    language = language_of(request)
    case_id = case_id_of(request, language)
    customer = await channel.customer_for_case(request, case_id, language)
    channel.limit(channel.reads, customer, language)
    offset = resume_offset(request.headers.get("last-event-id"))
    if offset is None:
        raise message_refusal(MessageRefusal.MALFORMED, language)
    view = await own_conversation(channel, customer, language)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    stream = _events(channel, case_id, offset, view.status, view.language)
    return StreamingResponse(stream, media_type=EVENT_STREAM, headers=headers)


async def _events(
    channel: Channel, case_id: str, offset: int, status: CaseStatus, language: Language
) -> AsyncIterator[str]:
    """The stream's text: the progress items as they come, keep-alive comments between them, then
    ``end`` (or ``unavailable``). The items are read by a task of their own into a small queue, so a
    keep-alive never cancels a read half done."""
    queue: asyncio.Queue[Progress | BaseException | None] = asyncio.Queue(QUEUED_ITEMS)

    async def read() -> None:
        try:
            async for entry in channel.conversations.progress(case_id, offset):
                await queue.put(entry)
            await queue.put(None)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the case could not be read: said to the client, who reconnects
            await queue.put(error)

    reader = asyncio.create_task(read())
    try:
        yield f"retry: {RETRY_MILLISECONDS}\n\n"
        while True:
            try:
                entry = await asyncio.wait_for(queue.get(), channel.config.keep_alive_seconds)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if entry is None:
                yield named_event("end", {"case_id": case_id, "status": status.value})
                return
            if isinstance(entry, BaseException):
                code = entry.code if isinstance(entry, SupportError) else type(entry).__name__
                LOG.warning("progress of case %s unavailable: %s", case_id, code)
                message = sentence(ChannelRefusal.UNAVAILABLE, language)
                yield named_event("unavailable", {"case_id": case_id, "message": message})
                return
            status = entry.item.status
            yield progress_event(entry)
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
