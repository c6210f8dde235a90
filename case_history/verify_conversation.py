"""Every customer message of a case, checked offline against its workflow histories and the public keys.

Pure: no server, no clock, no files. For each customer entry of the transcript (:func:`verify_conversation`):

1. the first message is the case's question, word for word (the applicant token link of
   :mod:`case_history.verify` proves who asked it);
2. every further message is the text of a ``message`` update the history holds, which the case
   answered with an acceptance of that message's number; the fingerprint of the update's token is the
   one the transcript names; and the token verifies, with the directory's keys, for the case's own
   customer and this case at the moment Temporal accepted the update. A token of an outside issuer is
   checked by that issuer's key set, which is not in the directory: it is reported as not re-verifiable
   offline (its fingerprint and claimed subject still checked), never as verified;
3. no text of a refused message is in the transcript.

A token is never part of a report: only its fingerprint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from case_history.conversation import BUILT_IN_ISSUER, Conversation, MessageOutcome, MessageUpdate
from case_history.trail import unverified_claims
from case_history.verify_wording import moment, printable, refusal_text
from contracts.case_input import CaseInput
from contracts.conversation import ConversationEntry, Speaker
from contracts.credentials import CredentialRefused, verify_applicant_token
from contracts.directory import Directory


class MessageState(StrEnum):
    OK = "OK"
    BROKEN = "BROKEN"
    UNCHECKED = "UNCHECKED"
    """Not re-verifiable offline (an outside issuer's token)."""


@dataclass(frozen=True)
class MessageCheck:
    """One customer entry of the transcript (``seq`` > 0), or the refused messages (``seq`` 0)."""

    seq: int
    turn: int
    state: MessageState
    detail: str


@dataclass(frozen=True)
class ConversationReport:
    case_id: str
    checks: tuple[MessageCheck, ...]
    messages: int
    """Customer entries in the transcript read."""
    replies: int
    refused: int
    missing: int
    """Entries before the first one read (not checked here)."""
    read_from: str

    @property
    def first_broken(self) -> MessageCheck | None:
        return next((check for check in self.checks if check.state is MessageState.BROKEN), None)

    @property
    def unchecked(self) -> list[MessageCheck]:
        return [check for check in self.checks if check.state is MessageState.UNCHECKED]


class _Broken(Exception):
    pass


class _Unchecked(Exception):
    pass


def verify_conversation(conversation: Conversation, case: CaseInput | None, keys: Directory) -> ConversationReport:
    """Check every customer message of ``conversation`` (the case's runs, joined) with ``keys`` (the
    directory's public keys, from outside the history); ``case`` is the first run's start input."""
    used: set[int] = set()
    checks: list[MessageCheck] = []
    for entry in conversation.customer_entries:
        try:
            state, detail = MessageState.OK, _entry(entry, conversation.messages, case, keys, used)
        except _Broken as broken:
            state, detail = MessageState.BROKEN, str(broken)
        except _Unchecked as unchecked:
            state, detail = MessageState.UNCHECKED, str(unchecked)
        checks.append(MessageCheck(entry.seq, entry.turn, state, detail))
    refused = conversation.refused
    if refused:
        checks.append(_refused_texts(refused, conversation.entries, used, conversation.messages))
    return ConversationReport(
        case_id=case.case_id if case else "?",
        checks=tuple(checks),
        messages=len(conversation.customer_entries),
        replies=len(conversation.replies),
        refused=len(refused),
        missing=conversation.missing,
        read_from=conversation.read_from,
    )


def _entry(
    entry: ConversationEntry, messages: Sequence[MessageUpdate], case: CaseInput | None, keys: Directory, used: set[int]
) -> str:
    if entry.credential is None:
        if entry.turn != 1:
            raise _Broken(f"message {entry.turn} names no credential: only the case's question may come without one")
        if case is None:
            raise _Broken("the case's start input does not decode, so its question cannot be compared")
        if entry.text != case.question:
            raise _Broken("the first message is not the question the case was started with")
        return "the case's question, word for word (the applicant token link proves who asked it)"
    update = _update_of(entry, messages, used)
    credential = entry.credential
    if update.fingerprint != credential.fingerprint:
        raise _Broken(
            f"the transcript names credential {printable(credential.fingerprint)}, but the update of event "
            f"{update.event_id} carried a token with fingerprint {update.fingerprint}"
        )
    assert update.token is not None
    customer = case.applicant if case else None
    if customer is not None and credential.subject != customer.subject:
        raise _Broken(
            f"the transcript names {printable(credential.subject)}, not the case's customer {customer.subject}"
        )
    where = f"update of event {update.event_id}, accepted {moment(update.at)}"
    if credential.issuer != BUILT_IN_ISSUER:
        claimed = (unverified_claims(update.token) or {}).get("sub")
        if customer is not None and claimed != customer.subject:
            raise _Broken(f"the token claims {printable(claimed)}, not the case's customer {customer.subject}")
        raise _Unchecked(
            f"{printable(credential.subject)} under {printable(credential.issuer)} credential {credential.fingerprint} "
            f"({where}): "
            "the fingerprint matches; the outside issuer's keys are not in the directory, so its signature is "
            "not re-verifiable offline"
        )
    if case is None:
        raise _Broken("the case's start input does not decode, so the token's case cannot be checked")
    try:
        identity = verify_applicant_token(update.token, keys, case_id=case.case_id, now=update.at)
    except CredentialRefused as refused:
        raise _Broken(f"the token of the {where}: {refusal_text(refused)}") from None
    if identity.subject != case.applicant.subject or identity.tenant != case.applicant.tenant:
        raise _Broken(f"the token proves {identity.subject} ({identity.tenant}), not the case's customer")
    return (
        f"{identity.subject} under built-in credential {credential.fingerprint} ({where}): signed by the issuer "
        f"for this case, valid when accepted"
    )


def _update_of(entry: ConversationEntry, messages: Sequence[MessageUpdate], used: set[int]) -> MessageUpdate:
    """The accepted, not yet matched ``message`` update that carried this entry: the one accepted as the
    entry's message number, else the first accepted one with its text."""
    accepted = [
        message
        for message in messages
        if message.outcome is MessageOutcome.ACCEPTED
        and not message.duplicate
        and message.text == entry.text
        and message.event_id not in used
    ]
    exact = [message for message in accepted if message.turn == entry.turn]
    found = next(iter(exact or accepted), None)
    if found is None:
        refused = any(message.text == entry.text for message in messages if message.outcome is MessageOutcome.REFUSED)
        why = "; a refused message had this text" if refused else ""
        raise _Broken(f"no accepted message update in the history holds this text{why}")
    used.add(found.event_id)
    if found.turn != entry.turn:
        raise _Broken(f"the update of event {found.event_id} was accepted as message {found.turn}, not {entry.turn}")
    return found


def _refused_texts(
    refused: list[MessageUpdate], entries: list[ConversationEntry], used: set[int], messages: Sequence[MessageUpdate]
) -> MessageCheck:
    """No refused message's text is in the transcript, except as a customer entry that an accepted
    update of the same text carried (the customer sent it again and it was taken)."""
    carried = {message.text for message in messages if message.event_id in used}
    for message in refused:
        for entry in entries:
            if (
                message.text
                and entry.text == message.text
                and not (entry.speaker is Speaker.CUSTOMER and entry.text in carried)
            ):
                detail = (
                    f"the text of the message refused at {moment(message.at)} ({printable(message.refusal)}) is "
                    f"entry {entry.seq} of the transcript"
                )
                return MessageCheck(0, 0, MessageState.BROKEN, detail)
    codes = sorted({printable(message.refusal) for message in refused})
    return MessageCheck(
        0,
        0,
        MessageState.OK,
        f"{len(refused)} refused message(s) ({', '.join(codes)}); none of their texts is in the transcript",
    )
