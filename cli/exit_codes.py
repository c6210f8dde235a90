"""What the exit status of a command that ran a case means (README: ``ask``, ``status``, ``review``,
``eval cases``, ``verify``), and which one a case's status or a refusal gets."""

from __future__ import annotations

from enum import IntEnum

from contracts.case import CaseStatus
from contracts.errors import SupportError, TransientError


class ExitCode(IntEnum):
    DECIDED = 0
    """The case reached a decision: answered, a proposal waits for a reviewer, rejected, withdrawn by the
    customer, or settled."""
    UNEXPECTED = 1
    """A bug: one line on stderr (SUPPORT_DEBUG=1 shows the traceback)."""
    REFUSED = 2
    """Bad input or a refused request: one line on stderr; nothing was started or changed."""
    NEEDS_PERSON = 3
    """The case needs a person: the customer's answer (waiting_customer: the service asked something and
    waits; answer with ``say``), or it ended needing more input or a human (needs_input, needs_human,
    expired)."""
    FAILED = 4
    """The case failed (status failed)."""
    UNAVAILABLE = 5
    """Temporal or a worker could not be reached, or the wait ran out before the case settled (a busy
    worker, a commerce outage, a case still working: stderr names the case, what it is doing and how
    to follow it; the case goes on); try again or follow it."""
    MISMATCH = 6
    """``eval cases``: at least one case did not end as expected."""
    CHAIN_BROKEN = 7
    """``verify``: a link of the case's chain of proof is forged, altered, or missing where it must be
    (the first broken link is named on stderr)."""
    CHAIN_INCOMPLETE = 8
    """``verify``: every link the case has holds, but it has not reached a signed receipt (the absent
    links are named)."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT), as shells report it (128 + 2): no traceback; a case already started is named on
    stderr, and it goes on."""


_STATUS_EXIT_CODES = {
    CaseStatus.QUEUED: ExitCode.DECIDED,
    CaseStatus.RUNNING: ExitCode.DECIDED,
    CaseStatus.COMPLETED: ExitCode.DECIDED,
    CaseStatus.WAITING_APPROVAL: ExitCode.DECIDED,
    CaseStatus.REJECTED: ExitCode.DECIDED,
    CaseStatus.WITHDRAWN: ExitCode.DECIDED,
    CaseStatus.WAITING_CUSTOMER: ExitCode.NEEDS_PERSON,
    CaseStatus.NEEDS_INPUT: ExitCode.NEEDS_PERSON,
    CaseStatus.NEEDS_HUMAN: ExitCode.NEEDS_PERSON,
    CaseStatus.EXPIRED: ExitCode.NEEDS_PERSON,
    CaseStatus.FAILED: ExitCode.FAILED,
}
"""Every status has its code: ``status`` of a case not yet decided (queued, running) exits 0, as it
showed the case as it is."""


def exit_code_for(status: CaseStatus) -> ExitCode:
    return _STATUS_EXIT_CODES[status]


def exit_code_for_error(error: SupportError) -> ExitCode:
    """A transient failure is worth trying again (5); any other refusal is final (2)."""
    return ExitCode.UNAVAILABLE if isinstance(error, TransientError) else ExitCode.REFUSED
