"""The conversation as the case page shows it: every customer message and service reply of the case's
transcript (``CaseView.conversation``), in order, with who said it, when, and under which credential
(a customer's message) or by whom it was written (a service reply), in the reviewer's language.

Nothing here renders: the case page's template does, autoescaped, so a customer's or a model's text is
shown as the text it is, never as markup. A credential is shown as the case keeps it (issuer and
fingerprint), never as a token.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from contracts.case import CaseView
from contracts.conversation import ConversationEntry, Speaker
from reviewer_console.words import Text, Words


@dataclass(frozen=True)
class ConversationLine:
    seq: int
    speaker: Speaker
    who: str
    """``customer alice`` or ``service``, in the reviewer's language."""
    at: datetime
    text: str
    """The words as the transcript holds them: data, never markup."""
    detail: str
    """A customer message's credential (or that it is the case's question); a reply's author."""


def conversation_lines(view: CaseView, words: Words) -> list[ConversationLine]:
    """The case's transcript, oldest first, as the case page lists it."""
    return [_line(entry, view.applicant, words) for entry in sorted(view.conversation, key=lambda entry: entry.seq)]


def _line(entry: ConversationEntry, applicant: str, words: Words) -> ConversationLine:
    if entry.speaker is Speaker.SERVICE:
        who = words(Text.SPEAKER_SERVICE)
        detail = words(Text.REPLY_TO, turn=entry.turn, source=words.source(entry.source))
    elif entry.credential is None:
        who = words(Text.SPEAKER_CUSTOMER, subject=applicant)
        detail = words(Text.FIRST_MESSAGE)
    else:
        credential = entry.credential
        who = words(Text.SPEAKER_CUSTOMER, subject=credential.subject)
        detail = words(Text.UNDER_CREDENTIAL, issuer=credential.issuer, fingerprint=credential.fingerprint)
    return ConversationLine(entry.seq, entry.speaker, who, entry.at, entry.text, detail)
