"""What a run accepts as its input, from what Temporal says about the run: a cron schedule is refused
whatever the input, a carried state only in a first attempt that Temporal continued (and then the
workflow still asks where it came from: tests/e2e/test_client_started_runs.py)."""

from __future__ import annotations

from temporalio.api.common.v1 import Payload

from contracts.case import Language
from contracts.case_input import CaseInput
from contracts.names import CaseInputRefusal, workflow_id
from contracts.payload_codec import CASE_DATA_CONVERTER
from keystore import demo_identity
from tests.workflows.test_carried_case import CONTINUED, _carried_input
from workflows.case_input import admit_case_input

CONVERTER = CASE_DATA_CONVERTER.payload_converter


def _fresh() -> tuple[CaseInput, Payload]:
    case = CaseInput(
        case_id="c-1234", question="Please refund QH-1001", language=Language.EN, applicant=demo_identity("alice")
    )
    (payload,) = CONVERTER.to_payloads([case])
    return case, payload


def test_a_fresh_case_is_admitted_in_a_plain_run() -> None:
    case, payload = _fresh()
    admitted = admit_case_input(CONVERTER, payload, run_workflow_id=workflow_id(case.case_id), continued_run_id=None)
    assert admitted.refusal is None and admitted.case == case


def test_a_cron_schedule_is_refused_for_a_fresh_and_for_a_later_run() -> None:
    case, payload = _fresh()
    for continued in (None, "run-1"):
        admitted = admit_case_input(
            CONVERTER,
            payload,
            run_workflow_id=workflow_id(case.case_id),
            continued_run_id=continued,
            cron_schedule="* * * * *",
        )
        assert admitted.refusal is CaseInputRefusal.CRON_SCHEDULE, continued
        assert "never a schedule" in admitted.reason


async def test_a_carried_state_is_refused_on_a_retry_attempt_and_passes_on_to_the_origin_check_otherwise() -> None:
    case, payload = await _carried_input(CONTINUED[0])
    run_id = workflow_id(case.case_id)
    retried = admit_case_input(CONVERTER, payload, run_workflow_id=run_id, continued_run_id="run-1", attempt=2)
    assert retried.refusal is CaseInputRefusal.CARRIED_STATE_NOT_CONTINUED
    first = admit_case_input(CONVERTER, payload, run_workflow_id=run_id, continued_run_id="run-1", attempt=1)
    assert first.refusal is None  # the workflow then asks Temporal where the run came from
