"""The channel's state (what every route reads: the cases, the verifier, the limits, the settings) and
the one way a request is refused: a JSON :class:`~customer_channel.bodies.Refusal` (the code and the
customer's sentence) with its HTTP status, raised as :class:`Refused` and answered by :func:`answering`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from contracts.conversation import MessageRefusal
from contracts.errors import SupportError
from contracts.knowledge import Language
from customer_channel.backend import Conversations
from customer_channel.bodies import Refusal
from customer_channel.config import ChannelConfig
from customer_channel.credentials import BearerVerifier, ChannelRefused, Customer, bearer_token
from customer_channel.limits import BodyTooLarge, RateLimiter, bounded_body
from customer_channel.words import ChannelRefusal, request_language, sentence
from keystore.directory_file import DirectorySource
from keystore.signers import KeyFileSigner

Model = TypeVar("Model", bound=BaseModel)
LOG = logging.getLogger("customer_channel")

STATUS_OF_REFUSAL = {
    MessageRefusal.MALFORMED: 422,
    MessageRefusal.TOO_LONG: 413,
    MessageRefusal.TOO_FREQUENT: 429,
    MessageRefusal.CASE_CLOSED: 409,
    MessageRefusal.ANOTHER_CUSTOMER: 403,
    MessageRefusal.ANOTHER_CASE: 403,
    MessageRefusal.EXPIRED: 403,
    MessageRefusal.NOT_VERIFIED: 403,
    MessageRefusal.CONFIRMATION_INVALID: 403,
}
"""The HTTP status of each refused message: 403 for a credential (a confirmation included) or another's
case, 409 closed, 413 too long, 422 malformed, 429 too frequent."""


class Refused(Exception):
    """A request answered with a refusal; :func:`answering` turns it into the response."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def refusal(code: str, message: str, status_code: int, *, retry_after: int | None = None) -> Refused:
    headers = {"Retry-After": str(retry_after)} if retry_after else {}
    if status_code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="customer-channel"'
    body = Refusal(refusal=code, message=message).model_dump()
    return Refused(JSONResponse(body, status_code=status_code, headers=headers))


def message_refusal(refused: MessageRefusal, language: Language, text: str | None = None) -> Refused:
    """A refused message, with the case's own sentence when it gave one, else ours."""
    return refusal(refused.value, text or sentence(refused, language), STATUS_OF_REFUSAL[refused])


def channel_refusal(refused: ChannelRefusal, language: Language, status_code: int, **values: object) -> Refused:
    seconds = values.get("seconds")
    retry_after = seconds if isinstance(seconds, int) else None
    return refusal(refused.value, sentence(refused, language, **values), status_code, retry_after=retry_after)


def unavailable(language: Language, reason: SupportError | str) -> Refused:
    """The service cannot answer now (no worker, Temporal or the directory unreachable): the reason
    logged (its code; never a credential), answered 503 with a sentence."""
    shown = f"{reason.code}: {reason.message[:200]}" if isinstance(reason, SupportError) else reason
    LOG.warning("unavailable: %s", shown)
    return channel_refusal(ChannelRefusal.UNAVAILABLE, language, 503)


def answering(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` with every :class:`Refused` answered as its response."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except Refused as refused:
            return refused.response

    return answer


@dataclass
class Channel:
    conversations: Conversations
    verifier: BearerVerifier
    directory: DirectorySource
    config: ChannelConfig
    signer: KeyFileSigner | None = None
    """Signs the demo sign-in's applicant tokens (``--demo-sign-in`` only)."""
    messages: RateLimiter = field(init=False)
    reads: RateLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.messages = RateLimiter(self.config.messages_per_minute)
        self.reads = RateLimiter(self.config.reads_per_minute)

    async def body(self, request: Request, model: type[Model], language: Language) -> Model:
        """The request's JSON body as ``model``: over the byte limit 413, a text over its limit 413
        (``message_too_long``), anything else that does not fit 422 (``message_malformed``)."""
        try:
            raw = await bounded_body(request, self.config.max_body_bytes)
        except BodyTooLarge:
            raise channel_refusal(
                ChannelRefusal.BODY_TOO_LARGE, language, 413, limit=self.config.max_body_bytes
            ) from None
        try:
            return model.model_validate_json(raw)
        except ValidationError as invalid:
            errors = invalid.errors()
            too_long = any(error["type"] == "string_too_long" and error["loc"] == ("text",) for error in errors)
            raise message_refusal(MessageRefusal.TOO_LONG if too_long else MessageRefusal.MALFORMED, language) from None

    def token(self, request: Request, language: Language) -> str:
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            raise channel_refusal(ChannelRefusal.NOT_SIGNED_IN, language, 401)
        return token

    async def customer_for_case(self, request: Request, case_id: str, language: Language) -> Customer:
        token = self.token(request, language)
        try:
            return await self.verifier.for_case(token, case_id)
        except ChannelRefused as refused:
            raise message_refusal(refused.refusal, language) from None
        except SupportError as error:
            raise unavailable(language, error) from None

    def limit(self, limiter: RateLimiter, customer: Customer, language: Language) -> None:
        wait = limiter.take(customer.key)
        if wait:
            raise channel_refusal(ChannelRefusal.TOO_MANY_REQUESTS, language, 429, seconds=wait)


def channel_of(request: Request) -> Channel:
    channel: Channel = request.app.state.channel
    return channel


def language_of(request: Request) -> Language:
    return request_language(request)
