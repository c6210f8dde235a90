"""A case started on release 0.10 (before conversations) is told apart, never a traceback.

Release 0.10 is its commit's code run from its own extracted tree, as a real ``worker.py --set-current``
against a dev server of the test's own. Its case waits for a reviewer; ``starter.py say`` to it, and
``send_message`` and ``conversation`` from the case client, each say in one sentence that the case
started before conversations and takes no messages. The case is untouched: no workflow task failed,
it still waits with the same proposal. Without git or without the commit the test fails saying what is
missing; it never skips.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from case_client import ClientErrorCode
from case_client._conversation import conversation, new_message_id, send_message
from cli.exit_codes import ExitCode
from contracts.case import CaseStatus
from contracts.conversation import CustomerMessage
from contracts.errors import BusinessError
from devstack.servers import DevServer
from keystore import demo_identity
from tests.case_world import connect_case_client
from tests.credentials_support import applicant_token
from tests.deploy_upgrade.release_tree import release_tree, spawn_release_worker
from tests.faults.fault_support import REFUND_QUESTION, FaultWorld, WorkerProcess

pytestmark = pytest.mark.slow

RELEASE = "v0.10"
ROOT = Path(__file__).resolve().parents[2]
SENTENCE = "was started on a release before conversations (0.10 or earlier): it takes no further messages"


async def test_a_case_of_release_0_10_takes_no_message_and_says_so(
    own_server: DevServer, started: list[WorkerProcess], tmp_path: Path
) -> None:
    commit, tree = release_tree(RELEASE, tmp_path / "release-0.10")
    client = await connect_case_client(own_server.address)
    world = FaultWorld.create(client, tmp_path)
    try:
        old = spawn_release_worker(
            own_server.address,
            world.state_dir,
            world.task_queue,
            name="worker-0.10",
            build_id=f"0.10.0-{commit[:12]}",
            tree=tree,
        )
        started.append(old)
        await old.ready()
        handle = await world.start(REFUND_QUESTION)
        view = await world.waiting_for_approval(handle)

        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
        env |= {"TEMPORAL_ADDRESS": own_server.address, "SUPPORT_TASK_QUEUE": world.task_queue, "COLUMNS": "200"}
        command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir)]
        command += ["--profile", "alice", "say", view.case_id, "any news?"]
        said = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)
        assert said.returncode == ExitCode.REFUSED, said.stdout + said.stderr
        [line] = said.stderr.splitlines()
        assert line.startswith("error: case_before_conversations: ") and SENTENCE in line, line
        assert "Traceback" not in said.stdout + said.stderr

        with pytest.raises(BusinessError) as read:
            await conversation(handle)
        assert read.value.code == ClientErrorCode.CASE_BEFORE_CONVERSATIONS and SENTENCE in read.value.message
        token = applicant_token(demo_identity("alice"), view.case_id)
        with pytest.raises(BusinessError) as sent:
            await send_message(handle, CustomerMessage(text="any news?", token=token, message_id=new_message_id()))
        assert sent.value.code == ClientErrorCode.CASE_BEFORE_CONVERSATIONS, sent.value

        # the refused update recorded nothing and failed no task: the case waits as it did
        history = await handle.fetch_history()
        assert not any(event.HasField("workflow_task_failed_event_attributes") for event in history.events)
        assert not any(
            event.HasField("workflow_execution_update_accepted_event_attributes") for event in history.events
        )
        now = await world.cases.open(view.case_id).status()
        assert now.status is CaseStatus.WAITING_APPROVAL and now.digest == view.digest
    finally:
        world.engine.dispose()
