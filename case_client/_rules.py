"""The client-side rules of a case: its ids, what a new case may ask, and who may see or list it."""

from __future__ import annotations

import hashlib
import uuid

from contracts import search_attributes as sa
from contracts.case import (
    MAX_APPROVAL_TTL_SECONDS,
    MAX_QUESTION_CHARS,
    MIN_APPROVAL_TTL_SECONDS,
    CaseInput,
    CaseOptions,
    CaseStatus,
    CaseView,
)
from contracts.effect_card import markdown_text
from contracts.errors import ContractError
from contracts.identity import Identity, Role
from contracts.knowledge import Language, question_language
from contracts.names import WORKFLOW_NAME

CASE_NOT_ACCESSIBLE = "No such case is available to this profile."
MAX_REQUEST_KEY_CHARS = 200
DEFAULT_APPROVAL_TTL_SECONDS = CaseOptions().approval_ttl_seconds


def case_id_for(request_key: str | None, identity: Identity) -> str:
    """A new random case id, or one derived from the applicant and request key (same key, same case).

    The applicant is part of the derivation, so one customer's key can never name another's case.
    """
    if request_key is None:
        return uuid.uuid4().hex[:12]
    scoped = f"{identity.tenant}:{identity.subject}:{request_key}"
    return "k" + hashlib.sha256(scoped.encode("utf-8")).hexdigest()[:15]


def may_see(view: CaseView, identity: Identity) -> bool:
    """The applicant sees their case; reviewers see the cases of their own tenant."""
    return view.applicant == identity.subject or (identity.role is Role.REVIEWER and identity.tenant == view.tenant)


def may_list(applicant: str | None, identity: Identity) -> bool:
    """In a listing of the tenant's cases (memo ``applicant``), a customer sees only their own."""
    return identity.role is Role.REVIEWER or applicant == identity.subject


def listing_query(identity: Identity, status: CaseStatus | None = None) -> str:
    """The visibility query for the cases of ``identity``'s tenant (optionally in one status)."""
    query = f'WorkflowType="{WORKFLOW_NAME}" AND {sa.TENANT.name}="{identity.tenant}"'
    if status:
        query += f' AND {sa.CASE_STATUS.name}="{status.value}"'
    return query


def check_question(question: str) -> str:
    """The question without surrounding blanks, or one line saying what is wrong and the limit."""
    text = question.strip()
    if not text:
        raise ContractError("invalid_question", 'the question is empty; ask something, e.g. "Where is QH-1005?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise ContractError(
            "invalid_question", f"the question has {len(text)} characters; the limit is {MAX_QUESTION_CHARS}"
        )
    return text


def check_ttl(seconds: int) -> int:
    if not MIN_APPROVAL_TTL_SECONDS <= seconds <= MAX_APPROVAL_TTL_SECONDS:
        raise ContractError(
            "invalid_ttl",
            f"--ttl-seconds must be from {MIN_APPROVAL_TTL_SECONDS} to {MAX_APPROVAL_TTL_SECONDS} "
            f"(7 days); got {seconds}",
        )
    return seconds


def check_request_key(key: str | None) -> str | None:
    if key is not None and not 1 <= len(key) <= MAX_REQUEST_KEY_CHARS:
        raise ContractError(
            "invalid_request_key", f"--request-key must be 1 to {MAX_REQUEST_KEY_CHARS} characters; got {len(key)}"
        )
    return key


def new_case(
    applicant: Identity,
    question: str,
    *,
    language: Language | None = None,
    ttl_seconds: int = DEFAULT_APPROVAL_TTL_SECONDS,
    request_key: str | None = None,
    case_id: str | None = None,
) -> CaseInput:
    """The input of a new case, checked before anything starts (one line per refusal, in this order:
    question, approval TTL, request key). The case id is ``case_id``, else derived from the request
    key (:func:`case_id_for`); the language defaults to the question's own (:func:`question_language`)."""
    text = check_question(question)
    ttl = check_ttl(ttl_seconds)
    key = check_request_key(request_key)
    return CaseInput(
        case_id=case_id or case_id_for(key, applicant),
        question=text,
        language=language or question_language(text),
        applicant=applicant,
        options=CaseOptions(approval_ttl_seconds=ttl),
    )


def static_summary(case: CaseInput) -> str:
    """The Web UI's one-line summary of a case: who asks what. Markdown-escaped: the question is the
    customer's text and must never render as a link or an image."""
    who = f"{markdown_text(case.applicant.subject, limit=40)} ({markdown_text(case.applicant.tenant, limit=40)})"
    return f"{who} asks: {markdown_text(case.question, limit=120)}"


def static_details(case: CaseInput) -> str:
    """The Web UI's details of a case as it started (markdown, escaped; the token is never shown)."""
    return "\n".join(
        [
            f"**Applicant:** {markdown_text(case.applicant.subject, limit=60)} "
            f"(tenant {markdown_text(case.applicant.tenant, limit=60)}; to be verified from the signed "
            "applicant token before anything is read)",
            f"**Language:** {case.language.value}",
            f"**Question:** {markdown_text(case.question, limit=600)}",
            "",
            "FICTIONAL data; any payment is SIMULATED. The current details show the case as it moves.",
        ]
    )
