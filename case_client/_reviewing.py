"""A reviewer's decision on a waiting proposal: by update (answered) or by signal (fire and forget)."""

from __future__ import annotations

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from contracts.case import ReviewDecision, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.errors import AuthorizationError, BusinessError
from contracts.names import REVIEW


async def review_by_update(
    handle: WorkflowHandle, case_id: str, decision: ReviewDecision | SignedReview
) -> ReviewOutcome:
    """The accepted outcome of the ``review`` update. A refusal (recorded in the case events by the
    workflow) is ``review_refused``; a case that cannot take an update is ``case_not_waiting``."""
    try:
        outcome = await handle.execute_update(REVIEW, decision, result_type=ReviewOutcome)
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        reason = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        raise AuthorizationError("review_refused", f"{reason} (recorded in the case events)") from None
    except RPCError as error:
        raise BusinessError("case_not_waiting", f"case {case_id} cannot take a review: {error.message}") from None
    if not outcome.accepted:
        raise AuthorizationError("review_refused", f"{outcome.reason} (recorded in the case events)")
    return outcome


async def review_by_signal(handle: WorkflowHandle, decision: ReviewDecision | SignedReview) -> None:
    """Send the ``review`` signal; its outcome is read later in the case events."""
    await handle.signal(REVIEW, decision)
