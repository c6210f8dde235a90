"""A reviewer's decision on a waiting proposal: by update (answered) or by signal (fire and forget)."""

from __future__ import annotations

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from case_client._codes import ClientErrorCode
from contracts.case import ReviewDecision, ReviewOutcome
from contracts.credentials import SignedReview
from contracts.errors import MAX_CODE_CHARS, AuthorizationError, BusinessError, WireCode, bounded
from contracts.names import REVIEW


class ReviewRefused(AuthorizationError):
    """A review the case refused (``review_refused``); ``refusal`` is why, as the workflow sent it: a
    :class:`contracts.names.ReviewRefusal` or a credential check's code, or None when it sent none."""

    def __init__(self, refusal: WireCode | None, message: str) -> None:
        super().__init__(ClientErrorCode.REVIEW_REFUSED, message)
        self.refusal = refusal


def _refusal_of(cause: BaseException | None) -> WireCode | None:
    """The refusal code a refused update's failure carries in its details (``{"code": ...}``)."""
    details = cause.details if isinstance(cause, ApplicationError) else ()
    code = details[0].get("code") if details and isinstance(details[0], dict) else None
    return WireCode(bounded(code, MAX_CODE_CHARS)) if isinstance(code, str) and code else None


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
        raise ReviewRefused(_refusal_of(cause), f"{reason} (recorded in the case events)") from None
    except RPCError as error:
        raise BusinessError(
            ClientErrorCode.CASE_NOT_WAITING, f"case {case_id} cannot take a review: {error.message}"
        ) from None
    if not outcome.accepted:
        raise ReviewRefused(WireCode(outcome.reason), f"{outcome.reason} (recorded in the case events)")
    return outcome


async def review_by_signal(handle: WorkflowHandle, decision: ReviewDecision | SignedReview) -> None:
    """Send the ``review`` signal; its outcome is read later in the case events."""
    await handle.signal(REVIEW, decision)
