"""What a run of the case workflow accepts as its input, decided before it reads or shows anything.

Anything a Temporal client can send is untrusted, the start input included. The input arrives raw, so
that an input the workflow cannot use ends the run ``failed`` with the reason at once instead of
failing every workflow task (a payload that does not decode as a case, a case id outside its pattern).
The state a waiting case carries into its next run (``CaseInput.carried``) is accepted only in a run
that this workflow's own continue-as-new started; a client that starts a workflow with a hand-made
``carried`` state would otherwise skip the applicant check and show its reviewer a proposal no verified
applicant asked for. Temporal sets ``continued_run_id`` for more than continue-as-new (every later run
of a cron schedule, every retry of a run, and a continue-as-new from a workflow of another type or
task queue, all of which a client chooses), so this module refuses at once what the run's own info
shows (any cron schedule, a carried state on a retry attempt), and the workflow then asks Temporal,
through the ``confirm_continued_run`` activity, that the run it continued was a case of this task
queue that closed by continuing as new (:mod:`activities.case.run_origin`). Pure: the workflow passes in
what Temporal says about the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError

from contracts.case_input import CaseInput
from contracts.errors import bounded
from contracts.names import CASE_INPUT_REFUSED, CASE_RESUMING, CaseInputRefusal, workflow_id


@dataclass(frozen=True)
class AdmittedInput:
    """The run's case input, or why the run refuses it (``case`` None only when it does not decode)."""

    case: CaseInput | None
    refusal: CaseInputRefusal | None = None
    detail: str = ""

    @property
    def reason(self) -> str:
        """``code: detail`` of the refusal (empty when admitted)."""
        if self.refusal is None:
            return ""
        return f"{self.refusal.value}: {self.detail}" if self.detail else self.refusal.value

    def failure(self) -> ApplicationError:
        """The run's failure when it refused its input: ``case_input_refused``, never retried."""
        assert self.refusal is not None
        return ApplicationError(self.reason, {"code": self.refusal.value}, type=CASE_INPUT_REFUSED, non_retryable=True)


def query_refusal(admitted: AdmittedInput, *, resuming: bool) -> ApplicationError | None:
    """The failure a query answers with while the run shows nothing: its input was refused, or the carried
    state it resumes is not confirmed yet (ask again in a moment); None when it shows the case."""
    if admitted.refusal is not None:
        closed = CASE_INPUT_REFUSED
        reason = f"{CASE_INPUT_REFUSED}: this run refused its start input and shows nothing ({admitted.reason})"
    elif resuming:
        closed = CASE_RESUMING
        reason = f"{CASE_RESUMING}: the case is confirming the state it continued with; ask again in a moment"
    else:
        return None
    return ApplicationError(reason, type=closed, non_retryable=True)


def admit_case_input(
    converter: PayloadConverter,
    payload: Payload,
    *,
    run_workflow_id: str,
    continued_run_id: str | None,
    cron_schedule: str | None = None,
    attempt: int = 1,
) -> AdmittedInput:
    """Decode the start input and check that this run may use it (see the module docstring)."""
    try:
        case = converter.from_payload(payload, CaseInput)
    except Exception as error:  # whatever a client sent: a refusal of the input, never a failed task
        return AdmittedInput(None, CaseInputRefusal.MALFORMED, describe_input_problem(error, len(payload.data)))
    if cron_schedule:
        detail = "a case is one customer's request, never a schedule: a run with a cron schedule reads nothing"
        return AdmittedInput(case, CaseInputRefusal.CRON_SCHEDULE, detail)
    if case.carried is None:
        return AdmittedInput(case)
    if not continued_run_id or attempt > 1:
        detail = "a run started by a client may not resume a case's state; only Temporal's continue-as-new does"
        return AdmittedInput(case, CaseInputRefusal.CARRIED_STATE_NOT_CONTINUED, detail)
    if not case.carried.waiting_undecided:
        detail = "a case carries its state into its next run only while it waits, undecided, for its reviewer"
        return AdmittedInput(case, CaseInputRefusal.CARRIED_STATE_NOT_WAITING, detail)
    if run_workflow_id != workflow_id(case.case_id):
        detail = f"the carried state is of case {bounded(case.case_id, 64)}, not of workflow {run_workflow_id}"
        return AdmittedInput(case, CaseInputRefusal.CARRIED_STATE_OF_ANOTHER_CASE, detail)
    return AdmittedInput(case)


def describe_input_problem(error: Exception, size: int) -> str:
    """One bounded line: the payload's size and the first problems, never the (possibly huge) input."""
    if isinstance(error, ValidationError):
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or 'input'}: {item['msg']}" for item in error.errors()[:3]
        ]
        return bounded(f"({size} bytes) " + "; ".join(problems), 240)
    return bounded(f"({size} bytes) not a case input: {type(error).__name__}", 240)
