"""A customer's further message: admitted, verified, refused or taken (workflow code, no I/O).

The ``message`` update's validator runs :func:`admission_refusal` on the raw payload, so a malformed,
over-long or too frequent message, or one to a closed case, is refused before Temporal records
anything. The handler then has the credential verified by an activity (:func:`verify_sender`) as of
the moment the message was accepted, compares the identity with the case's customer, checks the
limits again (other messages may have been taken meanwhile) and only then keeps the text. A refusal
is one sentence in the case's language; the refused text is never kept.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from contracts.approval_claims import CredentialCode
    from contracts.case_input import CaseState
    from contracts.conversation import (
        MAX_MESSAGE_CHARS,
        MAX_MESSAGES_PER_CASE,
        MAX_PENDING_MESSAGES,
        CustomerMessage,
        MessageCheck,
        MessageCredential,
        MessageRefusal,
        VerifiedSender,
        refusal_sentence,
    )
    from contracts.directory import ConversationPolicy
    from contracts.errors import SupportError, rebuilt_activity_failures
    from contracts.names import MESSAGE_REFUSED, ActivityName, EventKind
    from workflows import activity_options as options
    from workflows import case_metrics
    from workflows.short_steps import execute_short_step

_REFUSAL_OF_CREDENTIAL: dict[str, MessageRefusal] = {
    CredentialCode.TOKEN_FOR_ANOTHER_CASE: MessageRefusal.ANOTHER_CASE,
    CredentialCode.TOKEN_EXPIRED: MessageRefusal.EXPIRED,
}


def decoded_message(converter: PayloadConverter, payload: Payload) -> CustomerMessage | MessageRefusal:
    """The message, or why it cannot be one: too long (its text is over the limit), else malformed."""
    try:
        raw = converter.from_payload(payload)
    except Exception:  # anything a sender can encode: refused, never raised into the workflow task
        return MessageRefusal.MALFORMED
    text = raw.get("text") if isinstance(raw, dict) else None
    if isinstance(text, str) and len(text) > MAX_MESSAGE_CHARS:
        return MessageRefusal.TOO_LONG
    try:
        return CustomerMessage.model_validate(raw)
    except ValidationError:
        return MessageRefusal.MALFORMED


def admission_refusal(s: CaseState, message: CustomerMessage, now: datetime) -> MessageRefusal | None:
    """Why the case cannot take ``message`` now, before its credential is looked at; None: it may.
    A resent message id is never refused here (it is answered with its first acceptance)."""
    if s.lifecycle.outcome is not None:
        return MessageRefusal.CASE_CLOSED
    conversation = s.conversation
    if message.message_id in conversation.message_ids:
        return None
    if conversation.messages >= MAX_MESSAGES_PER_CASE or len(conversation.inbox) >= MAX_PENDING_MESSAGES:
        return MessageRefusal.TOO_FREQUENT
    if len(conversation.in_last_minute(now)) >= policy(s).messages_per_minute:
        return MessageRefusal.TOO_FREQUENT
    return None


def policy(s: CaseState) -> ConversationPolicy:
    """The tenant's conversation policy, as the directory recorded for this case says it."""
    if s.directory is None:
        return ConversationPolicy()
    return s.directory.conversation_policy(s.case.applicant.tenant)


def idle_limit(s: CaseState) -> timedelta:
    return timedelta(hours=policy(s).idle_hours)


async def verify_sender(
    s: CaseState, token: str, at: datetime
) -> tuple[VerifiedSender | None, MessageRefusal | None, str]:
    """The verified sender of a message and no refusal, or no sender, the refusal and the credential's
    code (for the case events)."""
    check = MessageCheck(case_id=s.case.case_id, token=token, at=at)
    try:
        with rebuilt_activity_failures():
            sender = await execute_short_step(
                ActivityName.VERIFY_CUSTOMER_MESSAGE,
                check,
                result_type=VerifiedSender,
                summary="verify the customer's message credential",
                local=options.VERIFY_LOCAL,
            )
    except SupportError as failure:
        return None, _REFUSAL_OF_CREDENTIAL.get(failure.code, MessageRefusal.NOT_VERIFIED), failure.code
    if sender.identity != s.case.applicant:
        return None, MessageRefusal.ANOTHER_CUSTOMER, "another_customer"
    return sender, None, "verified"


def credential_of(sender: VerifiedSender, token: str) -> MessageCredential:
    return MessageCredential(
        subject=sender.identity.subject, issuer=sender.issuer, fingerprint=token_fingerprint(token)
    )


def token_fingerprint(token: str) -> str:
    """The first 16 hex digits of the token's SHA-256: names a credential without keeping it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


def refused(
    s: CaseState, refusal: MessageRefusal, record: Callable[[EventKind, str], None], *, detail: str = ""
) -> ApplicationError:
    """Record ``refusal`` (its code, never the text) and the update's failure: the customer's sentence."""
    record(EventKind.MESSAGE_REFUSED, refusal.value + (f" ({detail[:80]})" if detail else ""))
    case_metrics.message_refused(s, refusal)
    return refusal_error(refusal, s)


def refusal_error(refusal: MessageRefusal, s: CaseState | None) -> ApplicationError:
    language = s.case.language if s is not None else None
    sentence = refusal_sentence(refusal, language) if language is not None else refusal_sentence(refusal)
    return ApplicationError(sentence, {"code": refusal.value}, type=MESSAGE_REFUSED, non_retryable=True)


_WITHDRAW = re.compile(
    r"^(?:please\s+)?(?:withdraw|cancel)(?:\s+(?:my|the|this))?(?:\s+(?:request|refund|case|proposal))?"
    r"(?:\s+please)?[.!]*$|^(?:撤回|撤销|取消)(?:申请|请求|退款)?[。！]*$"
)


def asks_to_withdraw(text: str) -> bool:
    """True for a message that only says to withdraw the request ("withdraw", "cancel my request",
    "撤回"): decided by code, never by a model, and strict: a longer message is a question."""
    folded = unicodedata.normalize("NFKC", text).strip().lower()
    return bool(_WITHDRAW.match(folded))
