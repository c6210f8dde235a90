"""The client-side rules of a case: its ids, what a new case may ask, and who may see or list it (and
how a listing's row reads)."""

from __future__ import annotations

import hashlib
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime

from temporalio.client import WorkflowExecution
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from case_client._codes import ClientErrorCode
from contracts import search_attributes as sa
from contracts.case import MAX_APPROVAL_TTL_SECONDS, MAX_QUESTION_CHARS, MIN_APPROVAL_TTL_SECONDS, CaseStatus, CaseView
from contracts.case_input import CaseInput, CaseOptions
from contracts.effect_card import markdown_text
from contracts.errors import ConfigurationError, ContractError
from contracts.identity import Identity, Role
from contracts.knowledge import Language, question_language
from contracts.names import WORKFLOW_NAME, case_id_of

CASE_NOT_ACCESSIBLE = "No such case is available to this profile."
MAX_REQUEST_KEY_CHARS = 200
DEFAULT_APPROVAL_TTL_SECONDS = CaseOptions().approval_ttl_seconds
DEFAULT_RETRY_WINDOW_SECONDS = 300.0
"""``ask`` without a request key: the same question by the same applicant within this many seconds of
the case it started returns that case (``SUPPORT_RETRY_WINDOW_SECONDS`` changes it)."""


def case_id_for(request_key: str | None, identity: Identity) -> str:
    """A new random case id, or one derived from the applicant and request key (same key, same case).

    The applicant is part of the derivation, so one customer's key can never name another's case.
    """
    if request_key is None:
        return uuid.uuid4().hex[:12]
    scoped = f"{identity.tenant}:{identity.subject}:{request_key}"
    return "k" + hashlib.sha256(scoped.encode("utf-8")).hexdigest()[:15]


def normalised_question(question: str) -> str:
    """What makes two questions "the same": Unicode compatibility forms, case and runs of blanks do not count."""
    return " ".join(unicodedata.normalize("NFKC", question).casefold().split())


@dataclass(frozen=True)
class RetryIds:
    """The case ids a question without a request key may have: this window's and the one before's."""

    current: str
    previous: str


def retry_case_ids(
    identity: Identity, question: str, *, task_queue: str, now: float, window_seconds: float
) -> RetryIds:
    """The ids of the same question's case in the time bucket of ``now`` and in the bucket before it.

    Time is cut into buckets of ``window_seconds`` (Unix time); a question's case id is derived from
    the applicant, the task queue, the normalised question and its bucket. A retry in the same bucket
    names the same case; one just after a bucket boundary finds it under ``previous`` (the caller
    accepts that case only if it started less than ``window_seconds`` ago). So the same question within
    the window of its case returns that case, and later starts a new one.
    """
    bucket = int(now // window_seconds)
    text = normalised_question(question)

    def case_id(number: int) -> str:
        scoped = f"{identity.tenant}:{identity.subject}:{task_queue}:{number}:{text}"
        return "q" + hashlib.sha256(scoped.encode("utf-8")).hexdigest()[:15]

    return RetryIds(current=case_id(bucket), previous=case_id(bucket - 1))


def may_see(view: CaseView, identity: Identity) -> bool:
    """The applicant sees their case; reviewers see the cases of their own tenant."""
    return view.applicant == identity.subject or (identity.role is Role.REVIEWER and identity.tenant == view.tenant)


def may_list(applicant: str | None, identity: Identity) -> bool:
    """In a listing of the tenant's cases (memo ``applicant``), a customer sees only their own."""
    return identity.role is Role.REVIEWER or applicant == identity.subject


@dataclass(frozen=True)
class CaseSummary:
    """One line of a case listing, read from the search attributes (no worker needed)."""

    case_id: str
    status: str | None
    phase: str | None
    order_id: str | None
    refund_cents: int | None
    started: datetime
    applicant: str | None = None
    """The applicant's subject as the search attribute holds it (set by the workflow once verified)."""


def summary_of(execution: WorkflowExecution) -> CaseSummary:
    """A listed workflow as a row of a case listing."""
    attrs = execution.typed_search_attributes
    return CaseSummary(
        case_id=case_id_of(execution.id),
        status=attrs.get(sa.CASE_STATUS),
        phase=attrs.get(sa.CASE_PHASE),
        order_id=attrs.get(sa.ORDER_ID),
        refund_cents=attrs.get(sa.REFUND_CENTS),
        started=execution.start_time,
        applicant=attrs.get(sa.APPLICANT),
    )


async def listed_for(execution: WorkflowExecution, viewer: Identity) -> bool:
    """Whether ``viewer`` sees ``execution`` in a listing (:func:`may_list` on its memo's applicant)."""
    if viewer.role is Role.REVIEWER:  # no need to decode the memo
        return True
    return may_list((await execution.memo()).get("applicant"), viewer)


def start_search_attributes(case: CaseInput) -> TypedSearchAttributes:
    """What a case's listing shows before any worker has run it: its tenant, its applicant and
    ``queued``. The workflow replaces each with what it verified (start attributes are untrusted)."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(sa.TENANT, case.applicant.tenant),
            SearchAttributePair(sa.APPLICANT, case.applicant.subject),
            SearchAttributePair(sa.CASE_STATUS, CaseStatus.QUEUED.value),
        ]
    )


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
        raise ContractError(
            ClientErrorCode.INVALID_QUESTION, 'the question is empty; ask something, e.g. "Where is QH-1005?"'
        )
    if len(text) > MAX_QUESTION_CHARS:
        raise ContractError(
            ClientErrorCode.INVALID_QUESTION,
            f"the question has {len(text)} characters; the limit is {MAX_QUESTION_CHARS}",
        )
    return text


def check_ttl(seconds: int) -> int:
    if not MIN_APPROVAL_TTL_SECONDS <= seconds <= MAX_APPROVAL_TTL_SECONDS:
        raise ContractError(
            ClientErrorCode.INVALID_TTL,
            f"--ttl-seconds must be from {MIN_APPROVAL_TTL_SECONDS} to {MAX_APPROVAL_TTL_SECONDS} "
            f"(7 days); got {seconds}",
        )
    return seconds


MAX_RETRY_WINDOW_SECONDS = 86400.0


def retry_window_seconds(value: str | None) -> float:
    """``SUPPORT_RETRY_WINDOW_SECONDS`` checked: seconds from 0 (off: every ``ask`` starts a new case) to a day."""
    if value is None or value.strip() == "":
        return DEFAULT_RETRY_WINDOW_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_RETRY_WINDOW_SECONDS:  # also refuses nan
        raise ConfigurationError(
            ClientErrorCode.INVALID_RETRY_WINDOW,
            f"SUPPORT_RETRY_WINDOW_SECONDS must be from 0 (off) to {MAX_RETRY_WINDOW_SECONDS:.0f} seconds; "
            f"got {value[:40]!r}",
        )
    return seconds


def check_request_key(key: str | None) -> str | None:
    if key is not None and not 1 <= len(key) <= MAX_REQUEST_KEY_CHARS:
        raise ContractError(
            ClientErrorCode.INVALID_REQUEST_KEY,
            f"--request-key must be 1 to {MAX_REQUEST_KEY_CHARS} characters; got {len(key)}",
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
