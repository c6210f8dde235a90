"""Release 0.1 to release 0.2 with Worker Versioning: the 0.1 worker drains while 0.2 is current.

Release 0.1 is the tag ``v0.1.0`` run from its own extracted tree; release 0.2 is this checkout. Both
run as real ``worker.py --set-current`` processes against a dev server of the test's own (making a
version current must not reroute the cases of the session server the other tests share). Without git
or without the tag's commit the test fails with what is missing; it never skips.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import Replayer

from case_client.deployment import BUILD_ID_ENV, current_build_id, open_cases_on, release
from contracts.case import CaseStatus
from contracts.names import DEPLOYMENT_NAME, REVIEW
from contracts.payload_codec import CASE_DATA_CONVERTER
from devstack.servers import DevServer
from tests.case_world import connect_case_client
from tests.deploy_upgrade.release_tree import launcher_report, release_tree, replay_in_tree, spawn_release_worker
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, WorkerProcess, approval
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

pytestmark = pytest.mark.slow

RELEASE = "v0.1"
"""Release 0.1 as tests/histories/releases.json names it (tag v0.1.0): the workflow with its
``workflow.patched`` branches, workers already versioned."""
FRESH_QUESTION = "Please refund QH-1002"
"""The case started after the switch (another order, so each order is paid at most once)."""
DRAIN_DEADLINE_SECONDS = 30.0


def release_0_2_build(old: str) -> tuple[str, str]:
    """This checkout's build id as ``release()`` names it, and the ``SUPPORT_BUILD_ID`` its worker gets
    ("": it names itself). A checkout at release 0.1's commit would name 0.1's build: that is refused."""
    own = release({k: v for k, v in os.environ.items() if k != BUILD_ID_ENV}).build_id
    assert own != old, f"this checkout names release 0.1's build {old!r}: run the test on a later commit"
    return own, ""


def task_builds(events: list[HistoryEvent], after: int = 0) -> list[str]:
    """The build id each WorkflowTaskCompleted event after event ``after`` records: server 1.32 fills
    ``deployment_version`` and ``worker_deployment_name`` (and the task's ``versioning_behavior``)."""
    builds = []
    for event in events:
        if event.event_id > after and event.HasField("workflow_task_completed_event_attributes"):
            attrs = event.workflow_task_completed_event_attributes
            assert attrs.versioning_behavior == VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, attrs
            assert attrs.HasField("deployment_version") and attrs.deployment_version.deployment_name == DEPLOYMENT_NAME
            assert attrs.worker_deployment_name == DEPLOYMENT_NAME, attrs
            builds.append(attrs.deployment_version.build_id)
    return builds


def task_pids(events: list[HistoryEvent], after: int) -> set[int]:
    """The pids in the identities (pid@host...) of the workflow tasks completed after event ``after``."""
    return {
        int(event.workflow_task_completed_event_attributes.identity.split("@", 1)[0])
        for event in events
        if event.event_id > after and event.HasField("workflow_task_completed_event_attributes")
    }


async def pinned_to(handle: WorkflowHandle) -> tuple[int, str, str]:
    """The case's versioning behaviour and the version it is pinned to, as ``describe`` reports them."""
    info = (await handle.describe()).raw_description.workflow_execution_info.versioning_info
    return info.behavior, info.deployment_version.deployment_name, info.deployment_version.build_id


async def listed_on(client: Client, version: WorkerDeploymentVersion, expected: set[str]) -> set[str]:
    """``open_cases_on(version)`` once it lists exactly ``expected`` (visibility lags), or at the deadline."""
    deadline = time.monotonic() + DRAIN_DEADLINE_SECONDS
    while True:
        found = set(await open_cases_on(client, version))
        if found == expected or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.25)


def no_failed_task(history: WorkflowHistory) -> bool:
    return not any(event.HasField("workflow_task_failed_event_attributes") for event in history.events)


async def test_a_0_1_case_drains_on_its_pinned_worker_while_0_2_takes_new_cases(
    own_server: DevServer, started: list[WorkerProcess], tmp_path: Path
) -> None:
    """What Worker Versioning promises for this release, checked against a real server and real workers.

    A case that started on 0.1 is PINNED to the 0.1 build: after 0.2 is deployed and made current, the
    case (approved after the switch) still runs every workflow task on the 0.1 worker, never on 0.2,
    and settles once (one receipt, one refund row). A case started after the switch is pinned to 0.2
    and runs only there. The drain query (``open_cases_on``) lists the 0.1 case while it waits and
    nothing once it has ended, and only then is the 0.1 worker stopped. Each history replays with its
    own release's code: the 0.2 case in-process, the 0.1 case in a process run in the 0.1 tree.
    """
    address = own_server.address
    commit, tree = release_tree(RELEASE, tmp_path / "release-0.1")
    client = await connect_case_client(address)
    world = FaultWorld.create(client, tmp_path)
    try:
        v0_1 = WorkerDeploymentVersion(DEPLOYMENT_NAME, f"0.1.0-{commit[:12]}")
        v0_2_build, v0_2_env = release_0_2_build(v0_1.build_id)
        v0_2 = WorkerDeploymentVersion(DEPLOYMENT_NAME, v0_2_build)
        pinned = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED

        # --- release 0.1: the tag's tree, its own worker.py, importing only that tree ----------------
        old = spawn_release_worker(
            address, world.state_dir, world.task_queue, name="worker-0.1", build_id=v0_1.build_id, tree=tree
        )
        started.append(old)
        await old.ready()
        report = launcher_report(old)
        assert all(Path(file).is_relative_to(tree.resolve()) for file in report["modules"].values()), report
        assert f"worker: build {v0_1.build_id!r} made the current version" in old.log(), old.log()[-3000:]
        assert await current_build_id(client) == v0_1.build_id

        handle = await world.start(REFUND_QUESTION)
        view = await world.waiting_for_approval(handle)
        assert view.proposal is not None and view.digest is not None
        assert (view.proposal.order_id, view.proposal.amount_cents) == ("QH-1001", 12900)
        assert await pinned_to(handle) == (pinned, DEPLOYMENT_NAME, v0_1.build_id)
        assert await listed_on(client, v0_1, {handle.id}) == {handle.id}  # the drain query sees it waiting

        # --- release 0.2: this checkout's worker.py deploys and becomes current ------------------------
        switched_after = (await handle.fetch_history()).events[-1].event_id
        new = spawn_release_worker(address, world.state_dir, world.task_queue, name="worker-0.2", build_id=v0_2_env)
        started.append(new)
        await new.ready()
        made = f"worker: build {v0_2.build_id!r} made the current version (was {v0_1.build_id!r})"
        assert made in new.log(), new.log()[-3000:]
        assert await current_build_id(client) == v0_2.build_id

        fresh = await world.start(FRESH_QUESTION)
        await handle.signal(REVIEW, approval("chen", view.case_id, view.digest))
        fresh_view = await world.waiting_for_approval(fresh)
        assert fresh_view.proposal is not None and fresh_view.proposal.order_id == "QH-1002"
        assert await pinned_to(fresh) == (pinned, DEPLOYMENT_NAME, v0_2.build_id)
        fresh_history = await fresh.fetch_history()
        fresh_builds = task_builds(list(fresh_history.events))
        assert fresh_builds and set(fresh_builds) == {v0_2.build_id}, fresh_builds
        assert task_pids(list(fresh_history.events), 0) == {new.pid}
        assert no_failed_task(fresh_history)

        # --- the 0.1 case, approved after the switch, finishes on the 0.1 worker ---------------------
        final = await world.result(handle)
        assert final.status is CaseStatus.COMPLETED and final.reason == "refund_settled", (final.status, final.reason)
        assert final.receipt is not None and (final.receipt.order_id, final.receipt.amount_cents) == ("QH-1001", 12900)
        rows = [(r.order_id, r.amount_cents, r.receipt_id) for r in world.refund_records() if r.order_id == "QH-1001"]
        assert rows == [("QH-1001", 12900, final.receipt.receipt_id)]
        history = await handle.fetch_history()
        events = list(history.events)
        after_switch = task_builds(events, switched_after)
        assert after_switch and set(after_switch) == {v0_1.build_id}, after_switch
        assert set(task_builds(events)) == {v0_1.build_id}
        assert task_pids(events, switched_after) == {old.pid}
        assert no_failed_task(history)
        assert await pinned_to(handle) == (pinned, DEPLOYMENT_NAME, v0_1.build_id)

        # --- the drain: nothing open on 0.1 while its worker still runs; only then it stops ------------
        open_on_0_1 = await listed_on(client, v0_1, set())
        still_running = not old.exited()
        assert open_on_0_1 == set(), f"still open on {v0_1.build_id}: {open_on_0_1}"
        assert still_running, "the 0.1 worker stopped before its cases drained"
        old.process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(old.process.wait, 30)
        assert code == 0 and "worker: stopped" in old.log(), old.log()[-3000:]
        assert await listed_on(client, v0_2, {fresh.id}) == {fresh.id}

        # --- each history replays with its own release's code ----------------------------------------
        replayer = Replayer(
            workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
        )
        replayed = await replayer.replay_workflow(fresh_history, raise_on_replay_failure=True)
        assert replayed.replay_failure is None
        history_file = tmp_path / "case-0.1-history.json"
        history_file.write_text(history.to_json(), encoding="utf-8")
        replay_in_tree(tree, history_file)
        # ...and only with it: 0.2's code cannot finish a 0.1 case, which is why cases are pinned
        on_0_2 = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert on_0_2.replay_failure is not None
        print(
            f"0.1 {v0_1.build_id} (pid {old.pid}) -> 0.2 {v0_2.build_id} (pid {new.pid}); receipt "
            f"{final.receipt.receipt_id}; 0.1 case {len(events)} events, {len(after_switch)} tasks after the switch"
        )
    finally:
        world.engine.dispose()
