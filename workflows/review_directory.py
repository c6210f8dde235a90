"""A review is judged against the directory as it is when the review arrives, read by an activity.

Workflow code. The slice of the directory that can decide the case is read again (the
``read_case_directory`` local activity, recorded in the history as what the decision used), so a
passkey enrolled or a key rotated while the case waits approves it, a removed reviewer or a revoked key
does not, and the tenant's policy is the one in force: the commerce server, which reads its own copy
when it pays, then applies the same.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseStatus
    from contracts.case_input import CaseState
    from contracts.credentials import CaseDirectoryRequest, SignedReview
    from contracts.directory import Directory
    from contracts.errors import SupportError, rebuilt_activity_failures
    from contracts.names import ActivityName, EventKind, ReviewRefusal
    from workflows import activity_options as options
    from workflows.approval_gate import adopt_directory
    from workflows.short_steps import execute_short_step


async def read_for_review(
    s: CaseState, review: object, record: Callable[[EventKind, str], None], *, via: str
) -> ReviewRefusal | None:
    """Read the directory for a signed review of a case that waits for one, and adopt it; the refusal
    when it cannot be read (the review then changes nothing). Other reviews need no read: the gate
    refuses them whatever the directory says."""
    waiting = s.lifecycle.status is CaseStatus.WAITING_APPROVAL and s.decision is None and s.proposal is not None
    if not isinstance(review, SignedReview) or not waiting:
        return None
    try:
        with rebuilt_activity_failures():
            fresh = await execute_short_step(
                ActivityName.READ_CASE_DIRECTORY,
                CaseDirectoryRequest(applicant=s.case.applicant.subject),
                result_type=Directory,
                summary="read the directory for a review",
                local=options.VERIFY_LOCAL,
            )
    except SupportError as failure:
        record(EventKind.DIRECTORY_READ, f"the directory could not be read: {failure.code}")
        return ReviewRefusal.DIRECTORY_UNAVAILABLE
    for change in adopt_directory(s, fresh, now=workflow.now(), via=via):
        record(EventKind.DIRECTORY_READ, change)
    return None
