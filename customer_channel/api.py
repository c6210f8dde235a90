"""The conversation routes: start one, write to it, read its transcript (the progress stream is
:mod:`customer_channel.events`).

Every route verifies the bearer credential first (:class:`~customer_channel.credentials.BearerVerifier`),
then counts the request against the customer's limit, then asks the case. A case is read only by its
own customer (same subject and tenant as the verified credential): anyone else gets the same 404 as
for a case that does not exist. A message for another customer's case is refused here, before it can
reach that case's history.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from case_client import new_case
from case_client._conversation import MessageRefused, new_message_id
from contracts.conversation import MESSAGE_ID_PATTERN, ConversationView, CustomerMessage, MessageRefusal
from contracts.errors import BusinessError, ContractError, SupportError
from contracts.knowledge import Language
from customer_channel.backend import CaseNotFound
from customer_channel.bodies import CASE_ID_PATTERN, ConversationStarted, SendMessage, StartConversation
from customer_channel.channel import (
    Channel,
    answering,
    channel_of,
    channel_refusal,
    language_of,
    message_refusal,
    unavailable,
)
from customer_channel.credentials import ChannelRefused, Customer
from customer_channel.words import ChannelRefusal

CASE_ID = re.compile(CASE_ID_PATTERN)
IDEMPOTENCY_KEY = "Idempotency-Key"
"""Starting with an outside issuer's token (which names no case): the same key, the same case."""
REQUEST_KEY = re.compile(MESSAGE_ID_PATTERN)


def events_url(case_id: str) -> str:
    return f"/v1/conversations/{case_id}/events"


def case_id_of(request: Request, language: Language) -> str:
    case_id = str(request.path_params["case_id"])
    if not CASE_ID.fullmatch(case_id):
        raise channel_refusal(ChannelRefusal.NOT_FOUND, language, 404)
    return case_id


async def own_conversation(channel: Channel, customer: Customer, language: Language) -> ConversationView:
    """The transcript of the customer's case; 404 for a case that does not exist or is another's."""
    try:
        view = await channel.conversations.conversation(customer.case_id)
    except CaseNotFound:
        raise channel_refusal(ChannelRefusal.NOT_FOUND, language, 404) from None
    except SupportError as error:
        raise unavailable(language, error) from None
    if not customer.owns(view.tenant, view.customer):
        raise channel_refusal(ChannelRefusal.NOT_FOUND, language, 404)
    return view


@answering
async def start_conversation(request: Request) -> Response:
    """``POST /v1/conversations``: the first message starts the case (Update-with-Start). Sent again, it
    attaches to the case it started: the built-in token names the case; with an outside issuer's token
    the ``Idempotency-Key`` header does."""
    channel = channel_of(request)
    language = language_of(request)
    token = channel.token(request, language)
    body = await channel.body(request, StartConversation, language)
    language = body.language or language
    request_key = request.headers.get(IDEMPOTENCY_KEY)
    if request_key is not None and not REQUEST_KEY.fullmatch(request_key):
        raise message_refusal(MessageRefusal.MALFORMED, language)
    try:
        customer = await channel.verifier.for_new_case(token, request_key)
    except ChannelRefused as refused:
        raise message_refusal(refused.refusal, language) from None
    except SupportError as error:
        raise unavailable(language, error) from None
    channel.limit(channel.messages, customer, language)
    try:
        case = new_case(customer.identity, body.text, language=body.language, case_id=customer.case_id)
    except ContractError:
        raise message_refusal(MessageRefusal.MALFORMED, language) from None
    case = case.model_copy(update={"applicant_token": token})
    try:
        if not await channel.conversations.serving():
            raise unavailable(case.language, "no worker polls the case task queue")
        reply = await channel.conversations.start(case, wait_seconds=channel.config.reply_wait_seconds)
    except MessageRefused as refused:
        raise message_refusal(refused.refusal, case.language, refused.message) from None
    except BusinessError:  # the case id is taken by another question, or the case refused it
        raise channel_refusal(ChannelRefusal.ALREADY_STARTED, case.language, 409) from None
    except SupportError as error:
        raise unavailable(case.language, error) from None
    started = ConversationStarted(
        case_id=case.case_id,
        turn=reply.turn,
        status=reply.status,
        reply=reply.reply,
        progress_offset=reply.progress_offset,
        events_url=events_url(case.case_id),
    )
    return JSONResponse(started.model_dump(mode="json"), status_code=201)


@answering
async def send_message(request: Request) -> Response:
    """``POST /v1/conversations/{case_id}/messages``: a further message, 202 once the case took it."""
    channel = channel_of(request)
    language = language_of(request)
    case_id = case_id_of(request, language)
    channel.token(request, language)  # no credential: 401 before the body is read
    body = await channel.body(request, SendMessage, language)
    customer = await channel.customer_for_case(request, case_id, language)
    channel.limit(channel.messages, customer, language)
    view = await own_conversation(channel, customer, language)
    message = CustomerMessage(
        text=body.text,
        token=customer.token,
        message_id=body.message_id or new_message_id(),
        confirmation=body.confirmation,
    )
    try:
        accepted = await channel.conversations.send(case_id, message, language=view.language)
    except MessageRefused as refused:
        raise message_refusal(refused.refusal, view.language, refused.message) from None
    except BusinessError:
        raise channel_refusal(ChannelRefusal.NOT_TAKEN, view.language, 409) from None
    except SupportError as error:
        raise unavailable(view.language, error) from None
    return JSONResponse(accepted.model_dump(mode="json"), status_code=202)


@answering
async def read_conversation(request: Request) -> Response:
    """``GET /v1/conversations/{case_id}``: the transcript, for the case's own customer only."""
    channel = channel_of(request)
    language = language_of(request)
    case_id = case_id_of(request, language)
    customer = await channel.customer_for_case(request, case_id, language)
    channel.limit(channel.reads, customer, language)
    view = await own_conversation(channel, customer, language)
    return JSONResponse(view.model_dump(mode="json"))
