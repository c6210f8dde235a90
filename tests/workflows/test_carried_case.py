"""A waiting case carried across continue-as-new: what the committed continued histories hold comes back
unchanged (less the keys release 0.2 retired), a 0.1 run's carried state is admitted by 0.2 code, and
every field of the case's state is either carried or named as not carried."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory

from contracts.case import CarriedCase, CaseInput
from contracts.names import workflow_id
from contracts.payload_codec import CASE_DATA_CONVERTER
from tests.release_code import current_release
from workflows.case_input import admit_case_input
from workflows.case_state import CARRIED_AS_IS, NOT_CARRIED, CaseState

HISTORIES = Path(__file__).parents[1] / "histories"
CONTINUED = sorted(current_release().folder.glob("review_flood-run1*.json"))
"""The current release's continued cases: a case continues as new on the version it is pinned to, so an
earlier release's carried state never meets this code (its histories replay against their own)."""
CONVERTED = {
    "continued": ("continued",),
    "log": ("events", "dropped_events"),
    "notes": ("notes",),
    "model": ("model_label", "tokens_known", "tokens_unknown_calls", "usage"),
    "facts": ("facts",),
    "evidence": ("evidence",),
    "used_approvals": ("used_approvals",),
    "approvals": ("approvals",),
}
"""The state fields carry() converts, and the carried fields each becomes."""
RETIRED = ("card_facts",)
"""Carried keys of release 0.1 that 0.2 ignores (a patch decision: every 0.2 case shows the card's facts)."""
RELEASE_0_1_CARRIED = HISTORIES / "v0.1" / "review_flood-run1-2026-12-issue13.json"


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
    (case,) = CASE_DATA_CONVERTER.payload_converter.from_payloads(payloads, [CaseInput])
    assert isinstance(case, CaseInput) and case.carried is not None
    return case, payloads[0]


def test_every_state_field_is_carried_as_is_converted_or_named_as_not_carried() -> None:
    state_fields = [field.name for field in dataclasses.fields(CaseState)]
    named = [*CARRIED_AS_IS, *CONVERTED, *NOT_CARRIED]
    assert sorted(named) == sorted(state_fields) and len(set(named)) == len(named)
    carried = [name for names in CONVERTED.values() for name in names]
    assert sorted([*CARRIED_AS_IS, *carried]) == sorted(CarriedCase.model_fields)


@pytest.mark.parametrize("path", CONTINUED, ids=[p.stem for p in CONTINUED])
async def test_a_carried_case_comes_back_as_it_was_carried(path: Path) -> None:
    case, committed = await _carried_input(path)
    assert case.carried is not None
    state = CaseState.from_carried(case, case.carried)
    assert state.continued == case.carried.continued
    again = state.carry()
    assert again.continued == case.carried.continued + 1
    state.continued -= 1  # the same run carrying the case once more writes exactly what it was carried with
    assert state.carry() == case.carried
    (payload,) = CASE_DATA_CONVERTER.payload_converter.to_payloads([case.model_copy(update={"carried": state.carry()})])
    written, rewritten = json.loads(committed.data)["carried"], json.loads(payload.data)["carried"]
    written = {key: value for key, value in written.items() if key not in RETIRED}
    assert list(rewritten)[: len(written)] == list(written) and {k: rewritten[k] for k in written} == written
    added = {name: rewritten[name] for name in list(rewritten)[len(written) :]}  # fields of later generations
    assert added == {name: CarriedCase.model_fields[name].get_default(call_default_factory=True) for name in added}


async def test_a_release_0_1_carried_state_is_admitted_and_its_retired_keys_ignored() -> None:
    """A 0.1 run continued as new onto 0.2 code: its carried state, with the ``card_facts`` that a 0.1 case
    which made its proposal under ``effect-card-facts`` carries, is admitted."""
    case, committed = await _carried_input(RELEASE_0_1_CARRIED)
    start = json.loads(committed.data)
    start["carried"]["card_facts"] = True
    payload = Payload(metadata=dict(committed.metadata), data=json.dumps(start).encode())
    admitted = admit_case_input(
        CASE_DATA_CONVERTER.payload_converter,
        payload,
        run_workflow_id=workflow_id(case.case_id),
        continued_run_id="the-0.1-run",
    )
    assert admitted.refusal is None and admitted.case is not None and admitted.case.carried is not None
    assert "card_facts" not in admitted.case.carried.model_dump()
    state = CaseState.from_carried(admitted.case, admitted.case.carried)
    assert state.proposal == admitted.case.carried.proposal and state.digest == state.proposal.digest()
    card = state.effect_card()
    assert card is not None and card.invoice_total_cents is not None  # 0.2 shows the card's facts
