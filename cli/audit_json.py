"""``starter.py audit --json``'s form of a :class:`~case_history.audit.CaseAudit`: one JSON-ready object
(:func:`audit_json`) with every activity, review attempt and case event in full; a token appears as its
unverified claims, never as the token, and a receipt without its signature.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel

from case_history.audit import NOT_VERIFIED, CaseAudit
from case_history.audit_reviews import CLAIMED
from case_history.conversation import MessageOutcome, MessageUpdate
from case_history.trail import unverified_claims


def audit_json(audit: CaseAudit, source: str | None = None) -> dict[str, Any]:
    """The audit as JSON-ready data; a token appears as its unverified claims, never as the token."""
    case, view, settlement, ending = audit.trail.case.value, audit.view, audit.trail.settlement, audit.ending
    request = settlement.request.value if settlement else None
    return {
        "case_id": audit.case_id,
        "workflow_id": audit.trail.workflow_id,
        "source": source,
        "verified": False,
        "note": f"{NOT_VERIFIED}; run `starter.py verify` to check the signatures",
        "asked": {
            "applicant": _plain(case.applicant) if case else None,
            "question": case.question if case else None,
            "language": case.language.value if case else None,
            "started_at": _plain(audit.trail.started_at),
            "applicant_token_claims": audit.applicant_claims,
            "claims_label": CLAIMED if audit.applicant_claims else None,
            "continued": audit.continued,
        },
        "activities": _plain(audit.activities),
        "model_requests": _plain(audit.model_requests),
        "tool_calls": _plain(audit.tool_calls),
        "refusals": _plain(audit.refusals),
        "case_events": _plain(audit.events),
        "evidence": {"answer_citations": audit.answer_citations, "quote_citations": audit.quote_citations},
        "proposal": _plain(audit.proposal),
        "digest": view.digest if view else None,
        "digest_recomputed": audit.recomputed_digest,
        "reviews": _plain(audit.reviews),
        "settlement": None
        if settlement is None
        else {
            "outcome": settlement.outcome,
            "scheduled_at": _plain(settlement.scheduled_at),
            # tokens are shown by what they claim, never as text (the applicant's is above)
            "request": request.model_dump(mode="json", exclude={"approval_token", "applicant_token"})
            if request
            else None,
            "request_problem": settlement.request.problem,
            "approval_token_claims": unverified_claims(request.approval_token) if request else None,
            "receipt": audit.receipt.model_dump(mode="json", exclude={"signature"}) if audit.receipt else None,
            "receipt_signed": bool(audit.receipt and audit.receipt.signature),
        },
        "action": _action(audit),
        "conversation": _conversation(audit),
        "answer": {"text": view.answer, "source": _plain(view.answer_source)} if view else None,
        "final": {
            "status": _plain(ending.status),
            "reason": ending.reason,
            "run_end": ending.run_end,
            "read_from": ending.source,
            "still_running": ending.still_running,
        },
        "problems": audit.problems,
    }


def _conversation(audit: CaseAudit) -> dict[str, Any]:
    """The transcript in full and every ``message`` update: its token as a fingerprint, never as the
    token, and a message the case did not take without its text (refused words are never recorded)."""
    talk = audit.conversation
    return {
        "entries": _plain(talk.entries),
        "missing_before": talk.missing,
        "read_from": talk.read_from,
        "runs_read": talk.runs,
        "messages": [_message(message) for message in talk.messages],
        "case_events": _plain(talk.events),
    }


def _message(message: MessageUpdate) -> dict[str, Any]:
    taken = message.outcome is MessageOutcome.ACCEPTED and not message.duplicate
    return {
        "event_id": message.event_id,
        "at": message.at.isoformat(),
        "update_id": message.update_id,
        "sender": message.sender,
        "message_id": message.message_id,
        "token_fingerprint": message.fingerprint,
        "outcome": message.outcome.value,
        "refusal": message.refusal,
        "answer": message.answer,
        "turn": message.turn,
        "duplicate": message.duplicate,
        "text": message.text if taken else None,
        "characters": len(message.text) if message.text is not None else None,
        "problem": message.problem,
        "run_id": message.run_id,
    }


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (dataclasses and pydantic models as objects, times as ISO text)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def _action(audit: CaseAudit) -> dict[str, Any] | None:
    """The action the case proposed: the proposal, the confirmations (their claims), the execution (its
    request without tokens, their claims beside it) and the receipt; None for a case that proposed none."""
    action = audit.action
    if not action.proposes:
        return None
    execution = action.execution
    request = execution.request.value if execution is not None else None
    proposal = request.proposal if request is not None else action.proposal
    return {
        "proposal": _plain(proposal),
        "digest_recomputed": proposal.computed_digest() if proposal else None,
        "confirmation_claims": [unverified_claims(token) for token in action.confirmations],
        "execution": None
        if execution is None
        else {
            "outcome": execution.outcome,
            "request": request.model_dump(mode="json", exclude={"confirmation_token", "approval_tokens", "proposal"})
            if request
            else None,
            "confirmation_claims": unverified_claims(request.confirmation_token) if request else None,
            "approval_claims": [unverified_claims(token) for token in request.approval_tokens] if request else [],
            "receipt": execution.receipt.value.model_dump(mode="json", exclude={"signature"})
            if execution.receipt.value
            else None,
        },
    }
