"""A waiting case carried across continue-as-new is its state itself (``CaseInput.carried`` is a
:class:`CaseState`): it comes back exactly as it was carried, a field added to the state travels with
it, and what no run of this code carries is refused as the run's input (a digest that is not the
proposal's, a decided state, an earlier release's carried shape)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory

from contracts.case import AcceptedApproval, CaseStatus, Decision, Phase, ReviewDecision
from contracts.case_input import CaseInput, CaseState
from contracts.model_io import ModelCallMeta, ModelUsage
from contracts.names import CaseInputRefusal, EventKind, workflow_id
from contracts.payload_codec import CASE_DATA_CONVERTER
from contracts.tools import FactKey
from tests.release_code import current_release, releases
from tests.workflows.state_support import waiting_state
from workflows.case_input import admit_case_input

CONTINUED = sorted(current_release().folder.glob("review_flood-run1*.json"))
"""The current release's continued cases: a case continues as new on the version it is pinned to, so an
earlier release's carried state never meets this code (its histories replay against their own)."""
CONVERTER = CASE_DATA_CONVERTER.payload_converter
AT = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)


async def _carried_input(path: Path) -> tuple[CaseInput, Payload]:
    """The input a flooded case continued as new with, as the old run wrote it (decoded by the codec)."""
    history = WorkflowHistory.from_json(path.stem, json.loads(path.read_text(encoding="utf-8")))
    continued = [
        e.workflow_execution_continued_as_new_event_attributes
        for e in history.events
        if e.HasField("workflow_execution_continued_as_new_event_attributes")
    ]
    assert len(continued) == 1
    codec = CASE_DATA_CONVERTER.payload_codec
    assert codec is not None
    payloads = await codec.decode(list(continued[0].input.payloads))
    (case,) = CONVERTER.from_payloads(payloads, [CaseInput])
    assert isinstance(case, CaseInput) and case.carried is not None
    return case, payloads[0]


def _through_the_converter(case: CaseInput) -> CaseInput:
    (payload,) = CONVERTER.to_payloads([case])
    (decoded,) = CONVERTER.from_payloads([payload], [CaseInput])
    assert isinstance(decoded, CaseInput)
    return decoded


def test_every_field_of_a_waiting_state_comes_back_as_it_was_carried() -> None:
    state = waiting_state()
    state.log.add(AT, EventKind.REVIEW_REFUSED, "unknown_signer")
    state.log.dropped = 3
    state.notes.append("a note")
    state.model.count(
        ModelCallMeta(
            provider="p", model="m", attempt=1, usage=ModelUsage(prompt_tokens=5, completion_tokens=2, total_tokens=7)
        ),
        "plan",
    )
    state.facts.keep(FactKey.ORDER, {"order_id": "QH-1001", "anything": ["as", "it", "came"]})
    state.used_approvals.update({"tok-b", "tok-a"})
    state.approvals.append(AcceptedApproval(reviewer="chen", approval_token="t", token_id="tok-a", at=AT, via="update"))
    state.record_path = "/records/c.json"

    resumed = CaseState.of(_through_the_converter(state.next_run_input()))

    assert resumed.continued == state.continued + 1
    assert resumed.model_copy(update={"continued": state.continued}) == state
    assert resumed.case == state.case and resumed.case.carried is None
    assert resumed.facts.wire() == state.facts.wire() and list(resumed.facts.wire()) == list(state.facts.wire())
    assert resumed.model.tokens_known == 7 and resumed.log.dropped == 3


def test_the_carried_payload_lists_used_approvals_in_one_order_whatever_the_set_order() -> None:
    state = waiting_state()
    state.used_approvals.update({"tok-z", "tok-a", "tok-m"})
    (payload,) = CONVERTER.to_payloads([state.next_run_input()])
    assert json.loads(payload.data)["carried"]["used_approvals"] == ["tok-a", "tok-m", "tok-z"]


@pytest.mark.parametrize("path", CONTINUED, ids=[p.stem for p in CONTINUED])
async def test_a_recorded_carried_state_is_resumed_and_carried_again_unchanged(path: Path) -> None:
    case, committed = await _carried_input(path)
    assert case.carried is not None and case.carried.waiting_undecided
    state = CaseState.of(case)
    again = state.next_run_input()
    assert again.carried is not None and again.carried.continued == case.carried.continued + 1
    (payload,) = CONVERTER.to_payloads([again.model_copy(update={"carried": state})])
    assert json.loads(payload.data) == json.loads(committed.data)


def test_a_carried_digest_that_is_not_the_proposals_does_not_decode() -> None:
    state = waiting_state()
    (payload,) = CONVERTER.to_payloads([state.next_run_input()])
    forged = json.loads(payload.data)
    forged["carried"]["digest"] = "0" * 64
    with pytest.raises(ValidationError, match="the digest is not the proposal's"):
        CaseInput.model_validate(forged)
    admitted = admit_case_input(
        CONVERTER,
        Payload(metadata=dict(payload.metadata), data=json.dumps(forged).encode()),
        run_workflow_id=workflow_id(state.case.case_id),
        continued_run_id="run-1",
    )
    assert admitted.refusal is CaseInputRefusal.MALFORMED and "digest" in admitted.reason


@pytest.mark.parametrize("decided", ["decision", "finished", "not_waiting"])
def test_a_carried_state_that_is_not_waiting_undecided_is_refused(decided: str) -> None:
    state = waiting_state()
    if decided == "decision":
        assert state.digest is not None
        state.decision = ReviewDecision(reviewer="chen", digest=state.digest, decision=Decision.APPROVE)
    elif decided == "finished":
        state.lifecycle.outcome = CaseStatus.REJECTED
    else:
        state.lifecycle.phase = Phase.DELIVER
    case = state.case.model_copy(update={"carried": state})
    (payload,) = CONVERTER.to_payloads([case])
    admitted = admit_case_input(CONVERTER, payload, run_workflow_id=workflow_id(case.case_id), continued_run_id="run-1")
    assert admitted.refusal is CaseInputRefusal.CARRIED_STATE_NOT_WAITING
    with pytest.raises(AssertionError):
        state.next_run_input()  # and this code never carries one


async def _continued_input_of(release: str) -> Payload:
    """The input a ``review_flood`` case of ``release`` continued as new with (its carried state)."""
    (path,) = sorted(releases()[release].folder.glob("review_flood-run1*.json"))[:1]
    history = WorkflowHistory.from_json(path.stem, json.loads(path.read_text(encoding="utf-8")))
    (event,) = [e for e in history.events if e.HasField("workflow_execution_continued_as_new_event_attributes")]
    codec = CASE_DATA_CONVERTER.payload_codec
    assert codec is not None
    (payload,) = await codec.decode(list(event.workflow_execution_continued_as_new_event_attributes.input.payloads))
    return payload


async def test_an_earlier_releases_carried_shape_is_refused_as_input_not_failed_as_a_task() -> None:
    """A pinned case continues as new on its own build (docs/upgrades.md), so this code never meets an
    earlier release's carried state; were 0.8's shape sent to it, the run refuses its input in one
    sentence. 0.10's state (a subset of this release's, every new field defaulted) decodes, and is then
    judged like any carried state: here, refused as another case's."""
    admitted = admit_case_input(
        CONVERTER, await _continued_input_of("v0.8"), run_workflow_id="case-x", continued_run_id="run-1"
    )
    assert admitted.refusal is CaseInputRefusal.MALFORMED
    assert admitted.reason.startswith("case_input_malformed: (") and "carried" in admitted.reason
    assert len(admitted.reason) <= 280
    admitted = admit_case_input(
        CONVERTER, await _continued_input_of("v0.10"), run_workflow_id="case-x", continued_run_id="run-1"
    )
    assert admitted.refusal is CaseInputRefusal.CARRIED_STATE_OF_ANOTHER_CASE
