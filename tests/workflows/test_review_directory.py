"""The approval gate adopts the directory as it is when a review arrives: a raised threshold asks for
one more approval, a lowered one decides the case on the approvals it holds, and an approval kept
earlier stops counting once its reviewer is removed. Pure: the directory edits are keystore's own."""

from __future__ import annotations

from datetime import UTC, datetime

from case_client import new_case
from contracts.case import AcceptedApproval, Decision, Phase
from contracts.case_input import CaseState, Lifecycle
from contracts.directory import Directory
from keystore import demo_identity
from keystore.directory_edit import remove_person, set_policy
from tests.case_data import refund_proposal
from tests.conftest import DemoKeys
from tests.credentials_support import signed_review
from workflows.approval_gate import adopt_directory, waiting_for_more

NOW = datetime(2026, 12, 1, 10, 5, tzinfo=UTC)
ALICE = demo_identity("alice")


def _slice(directory: Directory) -> Directory:
    return directory.for_case("alice")


def _waiting(directory: Directory, *, chen_approved: bool) -> CaseState:
    state = CaseState.of(new_case(ALICE, "Please refund QH-1001", case_id="case-1"))
    state.lifecycle = Lifecycle(phase=Phase.WAITING_APPROVAL)
    state.proposal = refund_proposal()
    state.digest = state.proposal.digest()
    state.directory = _slice(directory)
    if chen_approved:
        token = signed_review("chen", "case-1", state.digest).approval_token
        state.approvals.append(
            AcceptedApproval(reviewer="chen", approval_token=token, token_id="jti-chen-1", at=NOW, via="update")
        )
    return state


def test_the_same_directory_changes_nothing(demo_keys: DemoKeys) -> None:
    state = _waiting(demo_keys.directory(), chen_approved=False)
    assert adopt_directory(state, _slice(demo_keys.directory()), now=NOW, via="update") == []


def test_a_raised_threshold_asks_for_a_second_approval(demo_keys: DemoKeys) -> None:
    state = _waiting(demo_keys.directory(), chen_approved=True)
    assert state.approvals_required() == 1
    raised = _slice(set_policy(demo_keys.directory(), "qinghe", 10000))
    changes = adopt_directory(state, raised, now=NOW, via="update")
    assert changes == ["directory read for a review: 1 reviewer(s), 2 approval(s) needed"]
    assert state.decision is None and waiting_for_more(state) == "1 of 2 approvals"


def test_a_lowered_threshold_decides_on_the_approvals_held(demo_keys: DemoKeys) -> None:
    four_eyes = set_policy(demo_keys.directory(), "qinghe", 10000)
    state = _waiting(four_eyes, chen_approved=True)
    assert waiting_for_more(state) == "1 of 2 approvals"
    changes = adopt_directory(state, _slice(set_policy(four_eyes, "qinghe", None)), now=NOW, via="signal")
    assert changes[-1] == "the policy now needs 1 approval(s): the 1 held decide the case"
    assert state.decision is not None and state.decision.decision is Decision.APPROVE
    assert (state.decision.reviewer, state.decided_at, state.decided_via) == ("chen", NOW, "signal")
    assert state.approval_token == state.approvals[0].approval_token


def test_an_approval_kept_before_its_reviewer_was_removed_no_longer_counts(demo_keys: DemoKeys) -> None:
    four_eyes = set_policy(demo_keys.directory(), "qinghe", 10000)
    state = _waiting(four_eyes, chen_approved=True)
    without_chen = _slice(remove_person(four_eyes, "chen"))
    changes = adopt_directory(state, without_chen, now=NOW, via="update")
    assert changes[-1].startswith("the approval of chen no longer counts"), changes
    assert state.approvals == [] and state.decision is None
