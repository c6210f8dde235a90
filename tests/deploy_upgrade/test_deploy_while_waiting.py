"""A deploy while a case waits for its reviewer: the old code stops, the patched code finishes the case.

The old code is a real earlier version of this repository, not a stand-in (see the test's docstring
for which one and what is checked). Without git or without the repository's history (an exported
tree, a shallow clone) the test fails with what is missing; it never skips.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer

from case_history.trail import local_activity
from contracts.case import CaseStatus
from contracts.names import REVIEW
from contracts.payload_codec import CASE_DATA_CONVERTER
from tests.deploy_upgrade.release_tree import LAUNCHER_NAME, extract_tree, git, launcher_report, resolve
from tests.faults.fault_support import (
    REFUND_QUESTION,
    FaultWorld,
    WorkerProcess,
    alive,
    approval,
    spawn_worker,
    wait_until,
)
from workflows import patches
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

pytestmark = pytest.mark.slow

PATCH_COMMIT = "f3a6fdb82f8bdd6e53e82e65d76cea411608ba72"
"""'Case metadata for the Web UI': the commit that added ``CASE_METADATA`` to workflows/patches.py."""
OLD_COMMIT = f"{PATCH_COMMIT}^"
"""The code a case may have started on when that commit was deployed: its parent."""

FRESH_QUESTION = "Please refund QH-1002"
"""The case started after the deploy (another order, so each order is paid once)."""

HISTORY_OUT_ENV = "DEPLOY_UPGRADE_HISTORY_OUT"
"""When set, the mixed-version history is also written to this path (never over an existing file):
how the committed ``deployed_while_waiting`` history in tests/histories/v0.1/ was recorded."""


def extract_old_tree(target: Path) -> tuple[str, Path]:
    """The commit before 'case-metadata' (resolved in this repository), extracted into ``target``."""
    needed = f"commit {PATCH_COMMIT} and its parent"
    old = resolve(OLD_COMMIT, needed=needed)
    # The commit is the one this test is about: the patch id is new in it, absent before it.
    assert f'"{patches.CASE_METADATA}"' in git("show", f"{PATCH_COMMIT}:workflows/patches.py", needed=needed).decode()
    assert f'"{patches.CASE_METADATA}"' not in git("show", f"{old}:workflows/patches.py", needed=needed).decode()
    return old, extract_tree(old, target)


async def memo_keys(handle: WorkflowHandle) -> set[str]:
    """The memo as ``temporal workflow describe`` shows it: no worker involved."""
    return set(await (await handle.describe()).memo())


def patch_ids(events: list[HistoryEvent]) -> list[str]:
    """The patch ids of the history's patch markers, in order."""
    found = []
    for event in events:
        if event.HasField("marker_recorded_event_attributes"):
            details = event.marker_recorded_event_attributes.details
            if "patch-data" in details:
                found.append(json.loads(details["patch-data"].payloads[0].data)["id"])
    return found


def upserted_memo(events: list[HistoryEvent]) -> set[str]:
    """The memo keys the workflow upserted (commands in the history; ``model`` is not patched)."""
    return {
        key
        for event in events
        if event.HasField("workflow_properties_modified_event_attributes")
        for key in event.workflow_properties_modified_event_attributes.upserted_memo.fields
    }


def identities(events: list[HistoryEvent], first: int, last: int) -> dict[str, set[str]]:
    """Worker identities (pid@host...) of completed workflow tasks and started activities in [first, last]."""
    found: dict[str, set[str]] = {"workflow_task": set(), "activity": set()}
    for event in events:
        if not first <= event.event_id <= last:
            continue
        if event.HasField("workflow_task_completed_event_attributes"):
            found["workflow_task"].add(event.workflow_task_completed_event_attributes.identity)
        elif event.HasField("activity_task_started_event_attributes"):
            found["activity"].add(event.activity_task_started_event_attributes.identity)
    return found


def pids(found: set[str]) -> set[int]:
    return {int(identity.split("@", 1)[0]) for identity in found}


async def replay(history: WorkflowHistory) -> None:
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


@pytest.fixture
def world(temporal_client: Client, tmp_path: Path) -> Iterator[FaultWorld]:
    world = FaultWorld.create(temporal_client, tmp_path)
    yield world
    world.engine.dispose()


@pytest.fixture
def started() -> Iterator[list[WorkerProcess]]:
    """Worker processes of the test; every one (and its commerce servers) is killed afterwards."""
    processes: list[WorkerProcess] = []
    yield processes
    for process in processes:
        process.cleanup()


async def test_a_case_waiting_for_approval_is_finished_by_the_patched_workflow_after_a_deploy(
    world: FaultWorld, temporal_server, started: list[WorkerProcess], tmp_path: Path
) -> None:
    """The old code is the parent of the commit that introduced ``workflow.patched('case-metadata')``
    (the memo gets the proposal when the case starts waiting and the receipt after settlement),
    extracted with ``git archive`` into a temporary folder and run as its own ``worker.py`` process (its
    own folder as cwd and ``sys.path[0]``, the same venv). The deploy is the one docs/upgrades.md
    prescribes: a worker of the current checkout starts on the same task queue and state dir, then the
    old worker gets SIGTERM and stops gracefully (exit 0, its commerce servers closed), and only then
    does the reviewer approve.

    What the patch promises, checked against the real server: ``patched`` is decided once per run. The
    case that started on the old code has no ``case-metadata`` marker where the new code first asks
    (at the wait), so the new worker replays that point as False and keeps False for the rest of the
    run: the case settles without a memo upsert, proposal or receipt. A case started on the new worker
    takes the new branch and has both. Nothing is nondeterministic: no workflow task fails, and the
    mixed-version history replays with the current code.
    """
    address = temporal_server.address
    old_commit, old_tree = extract_old_tree(tmp_path / "old-tree")
    assert not (old_tree / "contracts" / "effect_card.py").exists()  # added by the patch commit

    # --- the old deployment: the earlier tree's worker.py, importing only that tree --------------------
    old = spawn_worker(
        address, world.state_dir, world.task_queue, name="worker-old", script=old_tree / LAUNCHER_NAME, cwd=old_tree
    )
    started.append(old)
    await old.ready()
    report = launcher_report(old)
    assert report["tree"] == str(old_tree.resolve())
    assert all(Path(file).is_relative_to(old_tree.resolve()) for file in report["modules"].values()), report
    current_ids = {v for k, v in vars(patches).items() if k.isupper() and isinstance(v, str)}
    assert patches.CASE_METADATA not in report["patch_ids"]
    assert set(report["patch_ids"]) < current_ids

    handle = await world.start(REFUND_QUESTION)
    view = await world.waiting_for_approval(handle)
    assert view.proposal is not None and view.digest is not None
    assert (view.proposal.order_id, view.proposal.amount_cents) == ("QH-1001", 12900)
    assert "proposal" not in await memo_keys(handle)  # the old code has no memo upsert
    last_old_event = (await handle.fetch_history()).events[-1].event_id

    # --- the deploy (docs/upgrades.md): start the current code on the queue, then stop the old worker
    new = spawn_worker(address, world.state_dir, world.task_queue, name="worker-new")
    started.append(new)
    await new.ready()
    old_servers = old.commerce_servers()
    assert old_servers
    old.process.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(old.process.wait, 30)
    assert code == 0 and "worker: stopped" in old.log(), old.log()[-3000:]
    await wait_until(lambda: not any(alive(pid) for pid in old_servers), "the old worker's commerce servers to end", 15)
    fresh = await world.start(FRESH_QUESTION)

    await handle.signal(REVIEW, approval("chen", view.case_id, view.digest))
    final = await world.result(handle)
    assert final.status is CaseStatus.COMPLETED and final.reason == "refund_settled", (final.status, final.reason)
    assert final.receipt is not None and final.receipt.receipt_id.startswith("SIM-")
    assert (final.receipt.order_id, final.receipt.amount_cents) == ("QH-1001", 12900)

    # --- the patch as documented: decided once per run, from the history --------------------------
    assert "receipt" not in await memo_keys(handle) and "proposal" not in await memo_keys(handle)
    history = await handle.fetch_history()
    events = list(history.events)
    kinds = [event.WhichOneof("attributes") for event in events]
    assert "workflow_task_failed_event_attributes" not in kinds  # no nondeterminism, no task failure
    assert not upserted_memo(events) & {"proposal", "receipt"}  # neither upsert in this run
    assert patches.CASE_METADATA not in patch_ids(events)
    assert patches.SHORT_STEPS_LOCAL not in patch_ids(events)  # nor any later patch: its tools ran as before
    assert not any(local_activity(event) for event in events)
    assert patches.SIGNED_CREDENTIALS in patch_ids(events)  # a patch the old code already had

    before = identities(events, 1, last_old_event)
    after = identities(events, last_old_event + 1, events[-1].event_id)
    assert pids(before["workflow_task"]) == pids(before["activity"]) == {old.pid}, before
    assert pids(after["workflow_task"]) == pids(after["activity"]) == {new.pid}, after
    scheduled = {
        event.event_id: event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events
        if event.HasField("activity_task_scheduled_event_attributes")
    }
    settled_by = [
        attrs.identity
        for event in events
        if event.HasField("activity_task_started_event_attributes")
        and scheduled[(attrs := event.activity_task_started_event_attributes).scheduled_event_id] == "execute_refund"
    ]
    assert pids(set(settled_by)) == {new.pid} and len(settled_by) == 1

    # The mixed-version history replays with the current code (as tests/workflows/test_replay.py does).
    await replay(history)

    # --- a case started on the new code takes the patched branch -----------------------------------
    fresh_view = await world.waiting_for_approval(fresh)
    assert fresh_view.digest is not None
    assert "proposal" in await memo_keys(fresh)
    await fresh.signal(REVIEW, approval("chen", fresh_view.case_id, fresh_view.digest))
    fresh_final = await world.result(fresh)
    assert fresh_final.status is CaseStatus.COMPLETED and fresh_final.receipt is not None
    fresh_memo = await (await fresh.describe()).memo()
    assert fresh_final.receipt.receipt_id in str(fresh_memo["receipt"])
    fresh_history = await fresh.fetch_history()
    assert {patches.CASE_METADATA, patches.SHORT_STEPS_LOCAL} <= set(patch_ids(list(fresh_history.events)))
    fresh_local = {marked.activity_type for e in fresh_history.events if (marked := local_activity(e)) is not None}
    assert fresh_local == {"verify_applicant", "run_investigation_tool"}
    assert {"proposal", "receipt"} <= upserted_memo(list(fresh_history.events))
    await replay(fresh_history)

    # Each order paid once, by its own case.
    rows = sorted((r.order_id, r.amount_cents, r.receipt_id, r.case_id) for r in world.refund_records())
    assert rows == [
        ("QH-1001", 12900, final.receipt.receipt_id, view.case_id),
        ("QH-1002", fresh_final.receipt.amount_cents, fresh_final.receipt.receipt_id, fresh_view.case_id),
    ]
    assert world.order("QH-1001").refunded_cents == 12900

    out = os.environ.get(HISTORY_OUT_ENV)
    if out:
        path = Path(out)
        assert not path.exists(), f"{path} exists: histories are never overwritten"
        path.write_text(history.to_json(), encoding="utf-8")
    timed_out = kinds.count("workflow_task_timed_out_event_attributes")
    print(
        f"old code {old_commit[:10]} (worker pid {old.pid}) -> current code (pid {new.pid}); "
        f"receipt {final.receipt.receipt_id}; {len(events)} events, {timed_out} workflow task(s) timed out; "
        f"patch markers {patch_ids(events)}"
    )
