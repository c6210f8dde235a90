"""The production sandbox runner re-executes the workflow module per run, and none of its helper modules."""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path
from types import CodeType
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from case_history.trail import recorded_workflow_id
from contracts.payload_codec import CASE_DATA_CONVERTER
from tests.release_code import current_release
from workflows.sandbox import WORKFLOW_HELPER_MODULES, workflow_runner
from workflows.support_case import SupportCaseWorkflow

HISTORY = [path for path in current_release().histories() if path.name.startswith("approved_refund-")][-1]
"""A refund case of the current code's release (an older release's history would not replay here)."""


def imported_as_from_workflows() -> set[str]:
    """The modules any workflow module imports as ``from workflows import name[, name] [as alias]``."""
    names: set[str] = set()
    for source in (Path(__file__).resolve().parents[2] / "workflows").glob("*.py"):
        for found in re.finditer(r"^\s*from workflows import (.+)$", source.read_text(encoding="utf-8"), re.M):
            names |= {part.split(" as ")[0].strip() for part in found.group(1).split(",")}
    return names


def history() -> WorkflowHistory:
    document = json.loads(HISTORY.read_text(encoding="utf-8"))
    return WorkflowHistory.from_json(recorded_workflow_id(document, HISTORY.stem), document)


async def test_a_run_executes_the_workflow_module_afresh_and_no_helper_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    await replayer.replay_workflow(history())  # the first run in this process may import anything
    executed: list[str] = []
    real_exec = builtins.exec

    def recording_exec(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, CodeType) and source.co_name == "<module>":
            executed.append(source.co_filename)
        return real_exec(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "exec", recording_exec)
    await replayer.replay_workflow(history())
    monkeypatch.undo()

    modules = {Path(name).as_posix().rsplit("/workflows/", 1)[-1] for name in executed if "/workflows/" in name}
    assert "support_case.py" in modules  # the sandbox still isolates the workflow module's state per run
    helpers = {f"{name}.py" for name in imported_as_from_workflows()}
    assert {f"workflows.{name}" for name in imported_as_from_workflows()} <= set(WORKFLOW_HELPER_MODULES)
    assert not modules & helpers, f"helper modules re-executed in the sandbox: {sorted(modules & helpers)}"
