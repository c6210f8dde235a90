"""The applicant token judged as of the case's recorded start, at the worker and at the commerce server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contracts.approval_claims import CredentialRefused
from contracts.case_start import (
    PROPOSAL_AFTER_START_LIMIT,
    UNSERVED_LIMIT,
    check_first_served,
    check_held_at_start,
)

START = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
ISSUED, EXPIRES = START - timedelta(minutes=1), START + timedelta(minutes=4)


def _code(call) -> str:
    with pytest.raises(CredentialRefused) as refused:
        call()
    return refused.value.code


def test_a_case_first_served_within_the_unserved_limit_goes_on() -> None:
    check_first_served(START, START + UNSERVED_LIMIT)
    check_first_served(START, START + timedelta(seconds=1))


def test_a_case_first_served_past_the_limit_or_started_in_the_future_is_refused() -> None:
    late = START + UNSERVED_LIMIT + timedelta(seconds=1)
    assert _code(lambda: check_first_served(START, late)) == "case_waited_unserved"
    assert _code(lambda: check_first_served(START + timedelta(minutes=5), START)) == "case_started_in_future"


def test_a_token_that_held_at_the_start_stands_behind_a_proposal_made_hours_later() -> None:
    created = START + timedelta(hours=6)  # a case queued through an outage, served and proposed later
    check_held_at_start(ISSUED, EXPIRES, started_at=START, proposal_created_at=created)


@pytest.mark.parametrize(
    ("issued", "expires", "started", "created", "code"),
    [
        (ISSUED, EXPIRES, EXPIRES, EXPIRES + timedelta(minutes=1), "token_expired_at_case_start"),
        (ISSUED, EXPIRES, EXPIRES + timedelta(days=39), EXPIRES + timedelta(days=39), "token_expired_at_case_start"),
        (START + timedelta(minutes=3), EXPIRES, START, START, "issued_after_case_start"),
        (ISSUED, EXPIRES, START, START - timedelta(minutes=5), "proposal_before_case_start"),
        (
            ISSUED,
            EXPIRES,
            START,
            START + PROPOSAL_AFTER_START_LIMIT + timedelta(seconds=1),
            "token_older_than_proposal",
        ),
    ],
)
def test_a_token_that_did_not_hold_at_the_start_is_refused(
    issued: datetime, expires: datetime, started: datetime, created: datetime, code: str
) -> None:
    assert _code(lambda: check_held_at_start(issued, expires, started_at=started, proposal_created_at=created)) == code


def test_a_proposal_without_a_recorded_start_needs_a_token_no_older_than_the_limit() -> None:
    check_held_at_start(ISSUED, EXPIRES, started_at=None, proposal_created_at=EXPIRES + PROPOSAL_AFTER_START_LIMIT)
    too_old = EXPIRES + PROPOSAL_AFTER_START_LIMIT + timedelta(seconds=1)
    assert _code(lambda: check_held_at_start(ISSUED, EXPIRES, started_at=None, proposal_created_at=too_old)) == (
        "token_older_than_proposal"
    )
    issued_later = START + timedelta(minutes=5)
    assert _code(
        lambda: check_held_at_start(
            issued_later, EXPIRES + timedelta(hours=1), started_at=None, proposal_created_at=START
        )
    ) == ("issued_after_case_start")
