"""The trusted poll loop (``CaseHandle.settled`` without a viewer) waits out a status query that timed
out, as it waits out a slow case, and still gives up at its deadline."""

from __future__ import annotations

import pytest

from case_client._reading import QueryUnanswered, wait_until_settled
from contracts.case import CaseView
from contracts.errors import TransientError
from tests.reviewer_console.console_double import waiting_view


async def test_an_unanswered_query_is_asked_again_until_the_case_answers() -> None:
    answers: list[CaseView | None] = [
        None,
        None,
        waiting_view("c1").model_copy(update={"record_path": "records/c1.json"}),
    ]
    asked: list[bool] = []

    async def read(first: bool) -> CaseView:
        asked.append(first)
        answer = answers.pop(0)
        if answer is None:
            raise QueryUnanswered
        return answer

    async def ended(_seconds: float) -> CaseView:
        raise AssertionError("the case did not end")

    view = await wait_until_settled(read, ended, wait_seconds=5, poll_seconds=0.01, on_progress=lambda _v: None)
    assert view.case_id == "c1" and asked == [True, True, True]


async def test_a_query_never_answered_gives_up_at_the_deadline() -> None:
    async def read(_first: bool) -> CaseView:
        raise QueryUnanswered

    async def ended(_seconds: float) -> CaseView:
        raise AssertionError("the case did not end")

    with pytest.raises(TransientError) as gave_up:
        await wait_until_settled(read, ended, wait_seconds=0.05, poll_seconds=0.01, on_progress=lambda _v: None)
    assert gave_up.value.code == "wait_timeout"
