"""Paying an approved proposal, and writing the case record (workflow code).

Settlement is the one write the workflow asks the commerce server for; its failure is classed once
(:func:`workflows.outcomes.settlement_failure`) and stops the case without a receipt. A case record
that cannot be written is an event, never a reason to lose the case's status.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseRecord
    from contracts.case_input import CaseState
    from contracts.commerce import RefundReceipt
    from contracts.errors import SupportError, rebuilt_activity_failures
    from contracts.names import ActivityName, EventKind
    from workflows import activity_options as options
    from workflows import case_details, requests
    from workflows.case_view import case_view
    from workflows.outcomes import CaseStopped, settlement_failure


async def execute_refund(s: CaseState, record: Callable[[EventKind, str], None]) -> RefundReceipt:
    """The commerce server's receipt for the accepted approval, or the stop that says why there is none."""
    request = requests.settle_request(s)
    summary = case_details.settle_summary(request.approval_id, request.proposal)
    try:
        with rebuilt_activity_failures():
            return await workflow.execute_activity(
                ActivityName.EXECUTE_REFUND,
                request,
                result_type=RefundReceipt,
                summary=summary,
                **options.SETTLE.kwargs(),
            )
    except SupportError as failure:
        record(EventKind.SETTLEMENT_FAILED, f"{failure.reported_class}: {failure.code}")
        raise CaseStopped.after(settlement_failure(failure)) from None


async def write_case_record(s: CaseState, record: Callable[[EventKind, str], None]) -> None:
    """Write the case record; a failure is recorded in ``s`` and as an event."""
    case_record = CaseRecord(case=case_view(s), events=list(s.log.events), notes=list(s.notes))
    try:
        with rebuilt_activity_failures():
            s.record_path = await workflow.execute_activity(
                ActivityName.WRITE_CASE_RECORD,
                case_record,
                result_type=str,
                summary=case_details.record_summary(s),
                **options.RECORD.kwargs(),
            )
    except SupportError as failure:
        s.record_error = failure.code
        record(EventKind.RECORD_WRITE_FAILED, s.record_error)
