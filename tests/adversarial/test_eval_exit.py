"""`starter.py eval cases` exits non-zero when a case does not end as expected."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.adversary import ScriptedWorld
from tests.adversarial.provider import json_reply

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


async def test_a_case_that_ends_otherwise_than_expected_is_exit_6(adversary: ScriptedWorld, temporal_server) -> None:
    # The first evaluation case (refund QH-1001) is planned as unsupported: no proposal, needs_human.
    unsupported: dict[str, Any] = {
        "intent": "unsupported",
        "order_id": None,
        "action_requested": False,
        "queries": [],
        "milestones": [],
    }
    adversary.provider.script("plan", json_reply(unsupported))
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY")}
    env.update(TEMPORAL_ADDRESS=temporal_server.address, SUPPORT_TASK_QUEUE=adversary.world.task_queue, COLUMNS="300")
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(adversary.world.state_dir)]
    done = await asyncio.to_thread(
        subprocess.run, [*command, "eval", "cases", "--live"], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 6, (done.stdout[-2000:], done.stderr)
    assert done.stderr.strip().splitlines()[-1] == (
        "error: 1 case(s) did not end as expected: refund inside the window"
    )
    assert "semantic judgement PENDING" in done.stdout
