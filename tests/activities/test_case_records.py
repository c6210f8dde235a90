"""Case records and language preferences: atomic files under the state dir."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.case.case_records import CaseRecords, record_digest, write_atomically
from activities.case.preferences import LanguagePreferences
from contracts.case import Budgets, CaseEvent, CaseRecord, CaseStatus, CaseView, Phase
from contracts.errors import BusinessError, ContractError
from contracts.knowledge import Language
from tests.activities.activity_support import run_bounded

AT = datetime(2026, 9, 12, 9, 30, tzinfo=UTC)


def _record(case_id: str = "case-0001", status: CaseStatus = CaseStatus.WAITING_APPROVAL) -> CaseRecord:
    view = CaseView(
        case_id=case_id,
        status=status,
        phase=Phase.WAITING_APPROVAL,
        applicant="alice",
        tenant="qinghe",
        question="Please refund QH-1001 and explain the amount",
        language=Language.EN,
        model="rehearsal",
        order_id="QH-1001",
        citations=["RETURNS:p02:en:0", "RETURNS:p03:en:0"],
        budgets=Budgets(),
    )
    return CaseRecord(case=view, events=[CaseEvent(at=AT, kind="planned", detail="refund")])


async def test_record_path_carries_case_id_and_content_digest(tmp_path: Path) -> None:
    records = CaseRecords(tmp_path)
    record = _record()

    path = Path(await ActivityEnvironment().run(records.write_case_record, record))

    digest = record_digest(record)
    assert path == (tmp_path / "cases" / f"case-0001-{digest[:12]}.json").resolve()
    assert path.read_text(encoding="utf-8").lstrip().startswith('{\n  "fictional_notice": "FICTIONAL')
    assert CaseRecord.model_validate_json(path.read_text(encoding="utf-8")) == record
    assert records.latest("case-0001") == path


async def test_a_changed_record_gets_a_new_file_and_latest_follows(tmp_path: Path) -> None:
    records = CaseRecords(tmp_path)
    env = ActivityEnvironment()

    first = Path(await env.run(records.write_case_record, _record()))
    second = Path(await env.run(records.write_case_record, _record(status=CaseStatus.COMPLETED)))
    again = Path(await env.run(records.write_case_record, _record(status=CaseStatus.COMPLETED)))

    assert first != second and second == again
    assert first.exists() and second.exists()
    assert (tmp_path / "cases" / "case-0001.latest").read_text(encoding="utf-8").strip() == str(second)
    assert json.loads(second.read_text(encoding="utf-8"))["case"]["status"] == "completed"
    leftovers = [p.name for p in (tmp_path / "cases").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


async def test_an_unsafe_case_id_is_a_non_retryable_contract_failure(tmp_path: Path) -> None:
    with pytest.raises(ApplicationError) as caught:
        await run_bounded(CaseRecords(tmp_path).write_case_record, _record("../../etc"))
    assert caught.value.type == "contract" and caught.value.non_retryable
    assert not (tmp_path / "cases").exists() or list((tmp_path / "cases").iterdir()) == []


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "record.json"
    write_atomically(target, "old")

    def fail_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail_fsync)
    with pytest.raises(OSError):
        write_atomically(target, "new and longer")

    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_a_preference_needs_consent(tmp_path: Path) -> None:
    preferences = LanguagePreferences(tmp_path)

    with pytest.raises(BusinessError) as caught:
        preferences.remember("alice", "zh", consent=False)

    assert caught.value.code == "consent_required"
    assert preferences.get("alice") is None
    assert not preferences.path.exists()


def test_a_consented_preference_is_remembered_per_subject_and_can_be_withdrawn(tmp_path: Path) -> None:
    preferences = LanguagePreferences(tmp_path)

    assert preferences.remember("alice", "zh", consent=True) is Language.ZH

    assert LanguagePreferences(tmp_path).get("alice") is Language.ZH
    assert preferences.get("bob") is None
    assert json.loads(preferences.path.read_text(encoding="utf-8"))["alice"]["language"] == "zh"
    assert preferences.forget("alice") is True
    assert preferences.get("alice") is None


def test_an_unknown_language_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ContractError) as caught:
        LanguagePreferences(tmp_path).remember("alice", "fr", consent=True)
    assert caught.value.code == "invalid_language"
