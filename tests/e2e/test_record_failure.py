"""A case record that cannot be written is an event; the case keeps its real status."""

from __future__ import annotations

import pytest

from contracts.case import CaseStatus, CaseView


@pytest.mark.slow
async def test_an_unwritable_record_directory_does_not_fail_the_case(world) -> None:
    world.state_dir.mkdir(parents=True, exist_ok=True)
    (world.state_dir / "cases").write_text("not a directory", encoding="utf-8")
    handle = await world.start("Where is my order QH-1005? Can I still change the delivery address?")
    final: CaseView = await handle.result()
    assert final.status is CaseStatus.COMPLETED and final.reason == "answered"
    assert final.record_path is None and final.record_error == "case_record_write_failed"
    kinds = [event["kind"] for event in await handle.query("events")]
    assert kinds[-1] == "record_write_failed" and "case_finished" in kinds
