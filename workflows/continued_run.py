"""A run that resumes a carried case state first asks Temporal where it came from, by an activity.

Workflow code. Temporal sets ``continued_run_id`` for every later run of a cron schedule, every retry
and a continue-as-new from any workflow, each with an input a client chose; only this workflow's own
continue-as-new may hand a waiting case to its next run (:mod:`activities.case.run_origin`).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.errors import AuthorizationError, SupportError, bounded, rebuilt_activity_failures
    from contracts.names import ActivityName
    from contracts.run_origin import ContinuedRunCheck, ContinuedRunConfirmed
    from workflows import activity_options as options
    from workflows.short_steps import execute_short_step


async def confirm_continued_run() -> str | None:
    """None when Temporal confirms that this workflow's continue-as-new started this run; else why not.

    A refusal (authorization) is returned, so the run ends failed reading nothing; a server that cannot
    answer fails the workflow task instead, which Temporal retries, so a genuine waiting case is never
    ended by an outage."""
    info = workflow.info()
    check = ContinuedRunCheck(continued_run_id=info.continued_run_id or "-", task_queue=info.task_queue)
    try:
        with rebuilt_activity_failures():
            await execute_short_step(
                ActivityName.CONFIRM_CONTINUED_RUN,
                check,
                result_type=ContinuedRunConfirmed,
                summary="confirm the run this case continued from",
                local=options.VERIFY_LOCAL,
            )
    except SupportError as failure:
        if not isinstance(failure, AuthorizationError):
            raise RuntimeError(f"could not confirm the run this case continued from: {failure.code}") from None
        return bounded(failure.message, 200)
    return None
