"""The ids ``ask`` gives a question without a request key, and the retry window's setting."""

from __future__ import annotations

import pytest

from case_client._rules import (
    DEFAULT_RETRY_WINDOW_SECONDS,
    normalised_question,
    retry_case_ids,
    retry_window_seconds,
)
from contracts.case_input import CaseInput
from contracts.errors import ConfigurationError
from contracts.knowledge import Language
from keystore import demo_identity

ALICE = demo_identity("alice")
QUESTION = "Where is my order QH-1005?"


def _ids(question: str = QUESTION, *, now: float, who: str = "alice", queue: str = "q", window: float = 300):
    return retry_case_ids(demo_identity(who), question, task_queue=queue, now=now, window_seconds=window)


def test_the_same_question_in_one_window_bucket_is_one_id_and_the_next_bucket_can_find_it() -> None:
    first = _ids(now=3000.0)
    assert _ids(now=3299.9) == first
    assert _ids(now=3300.0).previous == first.current  # just past the boundary: found as the previous bucket's
    assert _ids(now=3600.0).current != first.current and _ids(now=3600.0).previous != first.current
    CaseInput(case_id=first.current, question=QUESTION, language=Language.EN, applicant=ALICE)  # a valid case id


def test_case_blanks_and_width_do_not_make_another_question_but_words_and_people_do() -> None:
    assert normalised_question("  WHERE is my\torder ＱＨ-1005? ") == normalised_question(QUESTION)
    assert _ids("  WHERE is my  order QH-1005? ", now=3000.0) == _ids(now=3000.0)
    assert _ids("Where is my order QH-1006?", now=3000.0) != _ids(now=3000.0)
    assert _ids(now=3000.0, who="bob") != _ids(now=3000.0)
    assert _ids(now=3000.0, queue="other") != _ids(now=3000.0)


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, DEFAULT_RETRY_WINDOW_SECONDS), ("", 300.0), ("0", 0.0), ("2", 2.0)]
)
def test_the_window_setting(value: str | None, seconds: float) -> None:
    assert retry_window_seconds(value) == seconds


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf", "86401"])
def test_a_bad_window_setting_is_one_configuration_error(value: str) -> None:
    with pytest.raises(ConfigurationError, match="SUPPORT_RETRY_WINDOW_SECONDS must be from 0"):
        retry_window_seconds(value)
