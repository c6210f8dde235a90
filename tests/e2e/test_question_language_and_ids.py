"""What a first-hour customer writes: a Chinese question with no remembered preference, an order id in
lower case. ``starter.py ask`` runs as a real subprocess against the test server and a real worker."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from contracts.case import CaseStatus
from contracts.commerce import order_ids_in
from contracts.knowledge import Language, question_language
from tests.case_world import CaseWorld

ROOT = Path(__file__).resolve().parents[2]


async def _starter(world: CaseWorld, temporal_server, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": world.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


def _status(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _case_id(stdout: str) -> str:
    return next(line.split("case ", 1)[1].split()[0] for line in stdout.splitlines() if line.startswith("case "))


def test_the_question_language_is_decided_by_code() -> None:
    assert question_language("请退款QH-1002并给出依据") is Language.ZH
    assert question_language("QH-1005到哪了？") is Language.ZH
    assert question_language("Please refund QH-1002, 谢谢") is Language.EN
    assert question_language("Please refund QH-1002") is Language.EN


async def test_a_chinese_question_without_a_preference_is_answered_in_chinese(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "bob", "ask", "请退款QH-2002并给出依据")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    view = _status(
        await _starter(shared_world, temporal_server, "--profile", "bob", "status", _case_id(asked.stdout), "--json")
    )
    assert view["language"] == "zh" and view["status"] == CaseStatus.WAITING_APPROVAL
    assert any("\u4e00" <= ch <= "\u9fff" for ch in view["answer"]), view["answer"]

    # A remembered preference still decides over the question's language.
    remembered = await _starter(
        shared_world, temporal_server, "--profile", "lin", "remember", "--language", "en", "--consent"
    )
    assert remembered.returncode == 0, remembered.stderr
    asked = await _starter(shared_world, temporal_server, "--profile", "lin", "ask", "QH-3005到哪了？")
    view = _status(
        await _starter(shared_world, temporal_server, "--profile", "lin", "status", _case_id(asked.stdout), "--json")
    )
    assert view["language"] == "en"


def test_an_order_id_in_lower_case_names_the_order() -> None:
    assert order_ids_in("please refund qh-1001") == ["QH-1001"]
    assert order_ids_in("请退款qh-1001并给出依据") == ["QH-1001"]
    assert order_ids_in("refund qh-10011 or xqh-1001") == []
    assert order_ids_in("refund qh-1001 and QH-1001") == ["QH-1001"]


async def test_a_lower_case_order_id_reaches_the_same_proposal(world: CaseWorld) -> None:
    handle = await world.start("please refund qh-1001 and explain the amount")
    view = await world.settled(handle)
    assert view.status is CaseStatus.WAITING_APPROVAL, view.reason
    assert view.order_id == "QH-1001" and view.proposal is not None and view.proposal.amount_cents == 12900
