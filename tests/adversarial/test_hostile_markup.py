"""Model text that looks like terminal markup is printed as text by every starter.py command.

The draft below passes every gate (it cites the quote's pages and claims nothing), so it becomes the
case's answer; it carries Rich markup that, rendered as markup, would crash ``ask``, ``status`` and
``review-info`` (``[/b]``: MarkupError) or hide a link target from the reviewer (``[link=...]``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.case import CaseStatus
from tests.adversarial.adversary import ScriptedWorld
from tests.adversarial.provider import Request, json_reply

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MARKUP = "[/b] Read [link=https://evil.example/pay]the policy[/link] :warning: [bold red]now[/bold red]."


def _draft_with_markup(request: Request):
    pages = request.context["quote"]["citations"]
    citations = [next(pid for pid in request.evidence_ids if pid.startswith(page + ":")) for page in pages]
    text = f"Order QH-1001 qualifies for a refund proposal of CNY 129.00 (12900 cents). {MARKUP}"
    return json_reply({"answer": text, "citations": citations, "next_action": "propose_refund"})


async def _starter(adversary: ScriptedWorld, address: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY")}
    env.update(TEMPORAL_ADDRESS=address, SUPPORT_TASK_QUEUE=adversary.world.task_queue, COLUMNS="400")
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(adversary.world.state_dir), *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120, env=env)


def _unwrapped(stdout: str) -> str:
    """The card wraps a long answer at spaces (80 columns): read it back as one line."""
    return " ".join(stdout.split())


async def test_markup_in_an_answer_is_printed_literally_by_ask_status_and_review_info(
    adversary: ScriptedWorld, temporal_server
) -> None:
    adversary.provider.script("compose", _draft_with_markup)

    asked = await _starter(
        adversary, temporal_server.address, "--profile", "alice", "ask", "Please refund QH-1001 and explain"
    )
    assert asked.returncode == 0, asked.stderr
    assert "waiting_approval" in asked.stdout and MARKUP in _unwrapped(asked.stdout)
    case_id = asked.stdout.split("case ", 1)[1].split()[0]

    status = await _starter(adversary, temporal_server.address, "--profile", "alice", "status", case_id)
    info = await _starter(adversary, temporal_server.address, "--profile", "chen", "review-info", case_id)
    for shown in (status, info):
        assert shown.returncode == 0, shown.stderr
        assert MARKUP in _unwrapped(shown.stdout), shown.stdout  # the link target is visible, nothing interpreted
        assert "Traceback" not in shown.stderr and "MarkupError" not in shown.stderr
    view = await adversary.world.client.get_workflow_handle(f"case-{case_id}").query("status")
    assert view["status"] == CaseStatus.WAITING_APPROVAL.value
