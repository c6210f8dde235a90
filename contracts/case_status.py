"""Where a case is: its phases and statuses, and who wrote what a customer is shown.

Apart from :mod:`contracts.case` so that :mod:`contracts.conversation`, which :mod:`contracts.case`
imports, can name them too. :mod:`contracts.case` re-exports every name here.
"""

from __future__ import annotations

from enum import StrEnum

# --- lifecycle -----------------------------------------------------------------------------------


class Phase(StrEnum):
    PLAN = "plan"
    INVESTIGATE = "investigate"
    REVIEW = "review"
    DELIVER = "deliver"
    WAITING_APPROVAL = "waiting_approval"
    SETTLE = "settle"
    WAITING_CUSTOMER = "waiting_customer"
    """The service asked the customer something and waits for the next message (up to the tenant's idle limit)."""


class CaseStatus(StrEnum):
    QUEUED = "queued"
    """Started, before its first workflow task: the client's start search attributes say so (the
    workflow itself never sets it)."""
    RUNNING = "running"
    WAITING_APPROVAL = "waiting_approval"
    WAITING_CUSTOMER = "waiting_customer"
    """Not an end: the service asked the customer something and waits for the answer."""
    COMPLETED = "completed"
    NEEDS_INPUT = "needs_input"
    NEEDS_HUMAN = "needs_human"
    REJECTED = "rejected"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"
    """The customer withdrew the request before anyone approved it: nothing was paid."""
    FAILED = "failed"


TERMINAL_STATUSES = frozenset(
    {
        CaseStatus.COMPLETED,
        CaseStatus.NEEDS_INPUT,
        CaseStatus.NEEDS_HUMAN,
        CaseStatus.REJECTED,
        CaseStatus.EXPIRED,
        CaseStatus.WITHDRAWN,
        CaseStatus.FAILED,
    }
)


class AnswerSource(StrEnum):
    """Who wrote the ``answer`` a customer is shown."""

    MODEL_DRAFT = "model_draft"
    """A draft that passed the independent review and the deliver gate."""
    RECEIPT = "receipt"
    """Written by code from the commerce server's receipt, after settlement."""
    STATUS_NOTICE = "status_notice"
    """A fixed message for the case's status, written by code (no draft may be shown)."""
