"""A case is a conversation: the customer's messages, the service's replies, and the progress a
customer watches while a turn runs.

The first message is the case's question (the start input; :mod:`case_client` starts it with
Update-with-Start and the ``reply`` update). Every further message is the ``message`` update, carrying
the customer's own credential for this case, verified by the workflow through an activity before a
word of it is kept. What crosses the boundary is defined here, once:

- :class:`CustomerMessage`: the ``message`` update's payload; :class:`MessageAccepted` its answer.
- :class:`ReplyWait`: the ``reply`` update's payload (wait a short while for the reply to message
  ``seq``); :class:`TurnReply` its answer.
- :class:`ConversationEntry`: one message or reply of the transcript, as the case record, the
  console and ``audit`` show it. A customer entry names the credential it came under, never the token.
- :class:`ProgressItem`: one item of the case's progress stream (``temporalio.contrib.workflow_streams``,
  topic :data:`PROGRESS_TOPIC`). Every text on it is written by code, except a reply the deliver gate
  admitted; customer text never appears on it.
- :class:`MessageRefusal`: why a message was refused, with the sentence the customer reads.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from enum import StrEnum

from pydantic import Field

from contracts.case_status import AnswerSource, CaseStatus
from contracts.frozen import FrozenModel
from contracts.identity import Identity
from contracts.knowledge import Language

MESSAGE = "message"
"""The update a customer's further message arrives by."""
REPLY = "reply"
"""The update that waits a short while for the reply to one message (the first one with Update-with-Start)."""
CONVERSATION = "conversation"
"""The query that returns the transcript (:class:`ConversationView`)."""
PROGRESS_TOPIC = "progress"
"""The workflow stream topic a case publishes its :class:`ProgressItem` values on."""

MAX_MESSAGE_CHARS = 2000
"""A customer message longer than this is refused (``too_long``), not cut."""
MAX_REPLY_CHARS = 4000
MAX_TOKEN_CHARS = 4000
MAX_REPLY_WAIT_SECONDS = 30
MIN_MESSAGE_INTERVAL_SECONDS = 1.0
"""A message within this long of the customer's previous accepted one is ``too_frequent``."""
MAX_PENDING_MESSAGES = 3
"""Messages accepted but not yet taken up by a turn; one more is ``too_frequent``."""
MAX_MESSAGES_PER_CASE = 200
"""Customer messages one case accepts in all; one more is ``too_frequent`` (a new case may be started)."""
MAX_MODEL_TURNS_PER_CASE = 6
"""Turns that call the model (plan, investigate, draft, review) in one case; the next is handed to a
person (``needs_human``). Status questions and withdrawals answered by code do not count."""
MESSAGES_PER_RUN = 20
"""Messages one run takes before the case continues as new at its next wait (bounded history)."""
KEPT_ENTRIES = 40
"""Transcript entries carried into a continued run; older ones are counted (``ConversationLog.dropped``)
and stay in the case record and the earlier runs' histories, where ``audit`` reads them."""
MESSAGE_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"


class Speaker(StrEnum):
    CUSTOMER = "customer"
    SERVICE = "service"


class ReplySource(StrEnum):
    """Who wrote a service entry: the same three as a case's answer, and the case's records."""

    MODEL_DRAFT = AnswerSource.MODEL_DRAFT.value
    RECEIPT = AnswerSource.RECEIPT.value
    STATUS_NOTICE = AnswerSource.STATUS_NOTICE.value
    CASE_RECORDS = "case_records"
    """A status question or a withdrawal, answered by code from the case's own state."""


class MessageCredential(FrozenModel):
    """The credential a customer message came under, as the case keeps it: who, which issuer, and a
    fingerprint of the token (its SHA-256, first 16 hex digits); never the token itself."""

    subject: str = Field(max_length=200)
    issuer: str = Field(max_length=200)
    fingerprint: str = Field(pattern=r"^[0-9a-f]{16}$")


class ConversationEntry(FrozenModel):
    seq: int = Field(ge=1)
    """The entry's number in the case (messages and replies together, from 1)."""
    speaker: Speaker
    text: str = Field(max_length=MAX_REPLY_CHARS)
    at: datetime
    turn: int = Field(ge=1)
    """The customer message this entry belongs to (a reply names the message it answers)."""
    source: ReplySource | None = None
    """A service entry's author; None for a customer entry."""
    credential: MessageCredential | None = None
    """A customer entry's credential; None for the first message (the case's start token is verified by
    ``verify_applicant``) and for service entries."""


class CustomerMessage(FrozenModel):
    """The ``message`` update's payload."""

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    token: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS)
    """The customer's credential for this case: an applicant token bound to the case, or the outside
    issuer's ID token for the case's own customer."""
    message_id: str = Field(pattern=MESSAGE_ID_PATTERN)
    """The sender's key for this message: the same id sent again is answered with the first acceptance
    and taken once."""
    confirmation: str | None = Field(default=None, min_length=1, max_length=MAX_TOKEN_CHARS)
    """The customer's "yes" to the action proposal waiting for them: a confirmation their sign-in service
    signed over the proposal's digest (:mod:`contracts.action_credentials`). Verified by the workflow
    before the message is kept; a message without one never agrees to anything, whatever it says."""


class MessageAccepted(FrozenModel):
    case_id: str
    message_id: str
    turn: int = Field(ge=1)
    """The message's number among the customer's messages (the first message is 1)."""
    duplicate: bool = False
    """True when this message id was accepted before: nothing new was taken."""


class ReplyWait(FrozenModel):
    """The ``reply`` update's payload: wait up to ``wait_seconds`` for the reply to message ``turn``."""

    turn: int = Field(default=1, ge=1)
    wait_seconds: float = Field(default=10.0, ge=0, le=MAX_REPLY_WAIT_SECONDS)


class TurnReply(FrozenModel):
    case_id: str
    turn: int
    status: CaseStatus
    reply: ConversationEntry | None = None
    """The first service entry answering message ``turn``; None while the case is still working on it."""
    progress_offset: int = Field(ge=0)
    """The progress stream's length when this answer was made (read on from here)."""


class ProgressKind(StrEnum):
    MESSAGE_RECEIVED = "message_received"
    PLANNING = "planning"
    READING_ORDER = "reading_order"
    CHECKING_POLICY = "checking_policy"
    LOOKING_UP = "looking_up"
    DRAFTING = "drafting"
    REVIEWING = "reviewing"
    REPLY = "reply"
    WAITING_FOR_CUSTOMER = "waiting_for_customer"
    WAITING_FOR_REVIEWER = "waiting_for_reviewer"
    WITHDRAWN = "withdrawn"
    RECEIPT = "receipt"
    CLOSED = "closed"


class ProgressItem(FrozenModel):
    """One step a customer watches. ``text`` is a sentence written by code in the case's language, or,
    for ``reply``, the reply exactly as the transcript holds it."""

    kind: ProgressKind
    text: str = Field(max_length=MAX_REPLY_CHARS)
    at: datetime
    turn: int = Field(ge=1)
    status: CaseStatus
    until: datetime | None = None
    """Waiting for a reviewer: when the proposal expires; waiting for the customer: when the case closes."""


class ConversationView(FrozenModel):
    """What the ``conversation`` query returns."""

    case_id: str
    tenant: str
    customer: str
    language: Language
    status: CaseStatus
    entries: list[ConversationEntry]
    dropped: int = 0
    """Entries older than the kept ones (in the case record and earlier runs, not here)."""
    waiting_until: datetime | None = None
    """While the case waits for the customer: when it closes if nobody writes."""
    awaiting_confirmation: str | None = None
    """The digest of the action proposal that waits for this customer's signed "yes" (release 0.12);
    their sign-in signs a confirmation over exactly it, sent with the message that says yes."""


class MessageCheck(FrozenModel):
    """What the ``verify_customer_message`` activity is asked: does ``token`` prove a customer of this
    case at ``at`` (when Temporal accepted the message)?"""

    case_id: str
    token: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS)
    at: datetime


class VerifiedSender(FrozenModel):
    identity: Identity
    issuer: str = Field(max_length=200)


class MessageRefusal(StrEnum):
    MALFORMED = "message_malformed"
    TOO_LONG = "message_too_long"
    TOO_FREQUENT = "message_too_frequent"
    CASE_CLOSED = "case_closed"
    ANOTHER_CUSTOMER = "another_customers_case"
    ANOTHER_CASE = "token_for_another_case"
    EXPIRED = "credential_expired"
    NOT_VERIFIED = "credential_not_verified"
    CONFIRMATION_INVALID = "confirmation_invalid"
    """The message carries a confirmation that is not this customer's signed "yes" to the proposal
    waiting for them now (another proposal, expired, forged, or no proposal waits for one)."""


_REFUSAL_SENTENCES: dict[MessageRefusal, tuple[str, str]] = {
    MessageRefusal.MALFORMED: (
        "Your message could not be read. Please send it again as text.",
        "无法读取您的消息，请以文本形式重新发送。",
    ),
    MessageRefusal.TOO_LONG: (
        f"Your message is longer than {MAX_MESSAGE_CHARS} characters. Please shorten it and send it again.",
        f"您的消息超过 {MAX_MESSAGE_CHARS} 个字符，请缩短后重新发送。",
    ),
    MessageRefusal.TOO_FREQUENT: (
        "You are writing faster than we can answer. Please wait for our reply, then write again.",
        "您发送消息过于频繁。请等待我们的回复后再发送。",
    ),
    MessageRefusal.CASE_CLOSED: (
        "This conversation is closed. Please start a new one.",
        "此对话已结束，请开始新的对话。",
    ),
    MessageRefusal.ANOTHER_CUSTOMER: (
        "This conversation belongs to another customer; your message was not added to it.",
        "此对话属于另一位客户，您的消息未被添加。",
    ),
    MessageRefusal.ANOTHER_CASE: (
        "Your sign-in is for another conversation; your message was not added to this one.",
        "您的登录凭证属于另一个对话，您的消息未被添加到此对话。",
    ),
    MessageRefusal.EXPIRED: (
        "Your sign-in has expired. Please sign in again and resend your message.",
        "您的登录已过期，请重新登录后再发送消息。",
    ),
    MessageRefusal.NOT_VERIFIED: (
        "We could not verify who sent this message; it was not added to the conversation.",
        "我们无法核实此消息的发送者，该消息未被添加到对话中。",
    ),
    MessageRefusal.CONFIRMATION_INVALID: (
        "Your confirmation does not match the change waiting for you, so nothing was changed. "
        "Please read the proposal again and confirm that one.",
        "您的确认与当前待确认的变更不符，因此没有做任何更改。请重新查看方案后再确认。",
    ),
}


_YES = re.compile(
    r"^(?:yes|yes please|yes,? (?:go ahead|confirm(?:ed)?|do it)|confirm(?:ed)?|i confirm|go ahead"
    r"|ok(?:ay)?,? go ahead)[.!]*$|^(?:是|是的|确认|我确认|好的?，?确认|同意)[。！]*$"
)


def says_yes(text: str) -> bool:
    """True for a message that only says yes to a proposal ("yes", "confirm", "确认"). Only such a
    message gets the customer's signed confirmation from their sign-in (the channel, ``starter.py say``);
    the workflow never takes the words alone as agreement."""
    folded = unicodedata.normalize("NFKC", text).strip().lower()
    return bool(_YES.match(folded))


def refusal_sentence(refusal: MessageRefusal, language: Language = Language.EN) -> str:
    """The sentence a customer reads for ``refusal``, in ``language``."""
    english, chinese = _REFUSAL_SENTENCES[refusal]
    return chinese if language is Language.ZH else english
