"""`starter.py eval cases` runs the SPEC §11 questions end to end and reports the plumbing honestly."""

from __future__ import annotations

from case_eval import EVAL_CASES, eval_rows, is_rehearsal, run_case
from tests.credentials_support import applicant_token


async def test_every_evaluation_case_reaches_its_expected_status_without_surprise_proposals(shared_world) -> None:
    rows = [
        await run_case(shared_world.client, case, shared_world.task_queue, issuer=applicant_token)
        for case in EVAL_CASES
    ]
    assert is_rehearsal(rows)
    failures = [(r.case.name, r.view.status.value, r.view.reason) for r in rows if not r.plumbing_ok]
    assert failures == []
    table = eval_rows(rows, live=False)
    assert len(table) == len(EVAL_CASES) + 1 and table[0][-1] == "plumbing"
    assert all(row[5] == "no" for row in table[1:])
    assert all(row[7] == "unknown" for row in table[1:])
    live_table = eval_rows(rows, live=True)
    assert {row[-1] for row in live_table[1:]} == {"PENDING"}
