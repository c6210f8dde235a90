"""The JSON bodies of the channel's API, one pydantic model each: what a request carries and what an
answer holds. The conversation's own values (:class:`~contracts.conversation.MessageAccepted`,
:class:`~contracts.conversation.ConversationView`, :class:`~contracts.conversation.ProgressItem`,
:class:`~contracts.conversation.ConversationEntry`) are reused as they are; the OpenAPI description
(:mod:`customer_channel.openapi`) is generated from these models' JSON schemas.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from contracts.case import MAX_QUESTION_CHARS
from contracts.case_status import CaseStatus
from contracts.conversation import MAX_MESSAGE_CHARS, MAX_TOKEN_CHARS, MESSAGE_ID_PATTERN, ConversationEntry
from contracts.knowledge import Language

SUBJECT_PATTERN = r"^[A-Za-z0-9_.@-]{1,100}$"
CASE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class Body(BaseModel):
    """A request body: unknown fields refused, nothing coerced from another type."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class StartConversation(Body):
    """``POST /v1/conversations``: the first message, which is the case's question."""

    text: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    language: Language | None = None
    """The language of the replies; default: the question's own."""


class ConversationStarted(BaseModel):
    """The case the first message started (or, sent again with the same credential, the one it started)."""

    case_id: str
    turn: int
    status: CaseStatus
    reply: ConversationEntry | None = None
    """The first reply, when it was ready within a few seconds; else it arrives on the events stream."""
    progress_offset: int = Field(ge=0)
    """The progress stream's length when this answer was made."""
    events_url: str
    """``GET`` it (with the same kind of credential) for the progress as Server-Sent Events."""


class SendMessage(Body):
    """``POST /v1/conversations/{case_id}/messages``: a further message."""

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    message_id: str | None = Field(default=None, pattern=MESSAGE_ID_PATTERN)
    """The sender's key for this message: sent again, it is taken once. Default: a fresh one."""
    confirmation: str | None = Field(default=None, min_length=1, max_length=MAX_TOKEN_CHARS)
    """The customer's signed "yes" to the action proposal waiting for them (the conversation's
    ``awaiting_confirmation`` names its digest), from their sign-in; the case verifies it."""


class Refusal(BaseModel):
    """Every refused request: why (a code), and the sentence the customer reads."""

    refusal: str
    message: str


class DemoSignIn(Body):
    """``POST /demo/sign-in``: a customer of the demo directory, by name (demo sign-in only)."""

    subject: str = Field(pattern=SUBJECT_PATTERN)


class DemoCustomer(BaseModel):
    subject: str
    display_name: str
    tenant: str


class DemoCustomers(BaseModel):
    customers: list[DemoCustomer]


class DemoTokenRequest(Body):
    """``POST /demo/token``: an applicant token for this customer and case (a fresh case id when none)."""

    subject: str = Field(pattern=SUBJECT_PATTERN)
    case_id: str | None = Field(default=None, pattern=CASE_ID_PATTERN)


class DemoConfirmationRequest(Body):
    """``POST /demo/confirmation``: the customer's confirmation of one action proposal of one case."""

    subject: str = Field(pattern=SUBJECT_PATTERN)
    case_id: str = Field(pattern=CASE_ID_PATTERN)
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")


class DemoToken(BaseModel):
    token: str
    """A bearer credential: the built-in issuer's applicant token for ``case_id``, valid a few minutes."""
    case_id: str
    expires_in: int
    """Seconds until the token expires."""


class Health(BaseModel):
    status: str
    demo_sign_in: bool
