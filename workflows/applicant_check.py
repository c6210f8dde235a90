"""The first step of every case: its applicant token is verified, by an activity, as of the moment
Temporal recorded the case's start (a case queued through a worker outage goes on when one returns).

Workflow code (it schedules a local activity), kept apart from
the workflow class so that the class reads as the case's lifecycle. Nothing is read for a case whose
token does not verify; the slice of the directory the activity read (the tenant's policy, reviewers
and keys) is recorded in the state, and from then on only approvals signed by those reviewers decide.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseStatus
    from contracts.case_input import CaseState
    from contracts.credentials import ApplicantCheck, VerifiedApplicant
    from contracts.effect_card import markdown_text
    from contracts.errors import SupportError, rebuilt_activity_failures
    from contracts.names import ActivityName, EventKind, StopCode
    from workflows import activity_options as options
    from workflows.outcomes import CaseStopped
    from workflows.short_steps import execute_short_step


async def verify_applicant(s: CaseState, record: Callable[[EventKind, str], None]) -> None:
    """Verify the case's applicant token, or stop the case ``failed`` (``applicant_unverified``)."""
    case = s.case
    info = workflow.info()  # recorded by Temporal: the token is judged as of the start, once per case id
    check = ApplicantCheck(
        case_id=case.case_id,
        applicant_token=case.applicant_token,
        started_at=info.workflow_start_time,
        first_run_id=info.first_execution_run_id,
    )
    summary = f"verify applicant token ({markdown_text(case.applicant.subject, limit=40)})"
    try:
        with rebuilt_activity_failures():
            verified = await execute_short_step(
                ActivityName.VERIFY_APPLICANT,
                check,
                result_type=VerifiedApplicant,
                summary=summary,
                local=options.VERIFY_LOCAL,
            )
    except SupportError as failure:
        raise CaseStopped(CaseStatus.FAILED, StopCode.APPLICANT_UNVERIFIED, failure.code) from None
    if verified.identity != case.applicant:
        raise CaseStopped(CaseStatus.FAILED, StopCode.APPLICANT_UNVERIFIED, "applicant_mismatch")
    s.directory = verified.directory
    reviewers = len(verified.directory.reviewers(verified.identity.tenant))
    record(
        EventKind.APPLICANT_VERIFIED,
        f"{verified.identity.subject} ({verified.identity.tenant}), signed by the {verified.issuer} issuer; "
        f"directory recorded: {reviewers} reviewer(s) of {verified.identity.tenant}",
    )
