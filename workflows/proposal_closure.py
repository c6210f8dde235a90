"""Closing a rejected or expired proposal at the commerce server (workflow code).

A reviewer may have signed an approval that was never accepted, or approved and then been overruled
by a rejection; the token stays valid for its settle window. Once the case's decision is "not paid",
the workflow tells the commerce server, which from then on refuses every approval of the case,
whoever presents it (:mod:`commerce_server.case_decisions`). A failure to close is recorded and does
not change the case's outcome: the case was rejected or expired either way.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case_input import CaseState
    from contracts.commerce import ProposalClosed, ProposalOutcome
    from contracts.errors import SupportError, rebuilt_activity_failures
    from contracts.names import ActivityName, EventKind
    from workflows import activity_options as options
    from workflows import case_details, requests


async def close_proposal(s: CaseState, record: Callable[[EventKind, str], None], outcome: ProposalOutcome) -> None:
    """Close the case's proposal as ``outcome`` at the commerce server, and record how it went."""
    request = requests.closure_request(s, outcome)
    try:
        with rebuilt_activity_failures():
            closed = await workflow.execute_activity(
                ActivityName.CLOSE_REFUND_PROPOSAL,
                request,
                result_type=ProposalClosed,
                summary=case_details.closure_summary(request),
                **options.CLOSE.kwargs(),
            )
    except SupportError as failure:
        record(EventKind.PROPOSAL_CLOSE_FAILED, f"{failure.reported_class}: {failure.code}")
        return
    record(
        EventKind.PROPOSAL_CLOSED,
        f"closed as {closed.outcome.value} at the commerce server at {closed.closed_at.isoformat(timespec='seconds')}: "
        "no approval of this case is paid",
    )
