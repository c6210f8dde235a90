"""Every case status has its exit code, and a queued case (no worker has run it yet) lists as queued."""

from __future__ import annotations

from datetime import UTC, datetime

from case_client import CaseSummary, new_case
from case_client._rules import start_search_attributes
from cli.exit_codes import ExitCode, exit_code_for
from cli.render import case_list_lines
from contracts import search_attributes as sa
from contracts.case import CaseStatus
from keystore import demo_identity


def test_every_status_has_an_exit_code() -> None:
    codes = {status: exit_code_for(status) for status in CaseStatus}
    assert codes[CaseStatus.QUEUED] is codes[CaseStatus.RUNNING] is ExitCode.DECIDED
    assert codes[CaseStatus.FAILED] is ExitCode.FAILED and codes[CaseStatus.EXPIRED] is ExitCode.NEEDS_PERSON


def test_a_case_starts_queued_with_its_tenant_and_applicant() -> None:
    alice = demo_identity("alice")
    attributes = start_search_attributes(new_case(alice, "Please refund QH-1001", case_id="case1"))
    assert attributes.get(sa.CASE_STATUS) == CaseStatus.QUEUED.value
    assert (attributes.get(sa.TENANT), attributes.get(sa.APPLICANT)) == (alice.tenant, alice.subject)
    assert {pair.key.name for pair in attributes} <= {key.name for key in sa.ALL_KEYS}


def test_a_queued_case_lists_as_queued() -> None:
    summary = CaseSummary("c1", CaseStatus.QUEUED.value, None, None, None, datetime(2026, 12, 2, 18, 0, tzinfo=UTC))
    lines = case_list_lines("q", [summary])
    assert lines[-1].split()[:2] == ["c1", "queued"]
