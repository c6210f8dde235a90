"""Test-only launcher: the real ``worker.py`` with one pause injected, so a test can SIGKILL it there.

Production code has no test hooks. This script, run as its own process by the fault tests, wraps
one production method in this process only (the pauses are listed at :func:`_install_pauses`) and
then runs ``worker.run`` with the same arguments and environment as ``python worker.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

import worker  # noqa: E402
from activities.commerce.commerce_sessions import CommerceSessionPool  # noqa: E402
from activities.commerce.settlement import SettlementActivities  # noqa: E402
from activities.commerce.tool_activities import ToolActivities  # noqa: E402
from activities.model.model_gateway import ModelGateway  # noqa: E402
from contracts.case import SettleRequest  # noqa: E402
from contracts.commerce import RefundReceipt  # noqa: E402

PAUSE_SECONDS = 3600


def _mark(payload: dict[str, Any]) -> None:
    marker = Path(os.environ["FAULT_MARKER"])
    temporary = marker.with_suffix(".tmp")
    temporary.write_text(json.dumps(payload, default=str), encoding="utf-8")
    temporary.replace(marker)
    print(f"paused_worker: paused at {payload['where']}", flush=True)


def _install_pauses() -> None:
    """Wrap the production methods that the environment names, in this process only.

    ``FAULT_PAUSE_AFTER_COMMERCE=execute_refund``
        wrap ``CommerceSessionPool.call``: after the commerce server ANSWERED this MCP tool (so its
        transaction is committed), write the marker with the answer and pause;
    ``FAULT_PAUSE_BEFORE_TOOL=calculate_refund``
        wrap ``ToolActivities.dispatch``: when the investigation tool activity starts this tool, write
        the marker and pause before anything is sent.
    ``FAULT_PAUSE_IN_MODEL=compose``
        wrap ``ModelGateway.compose`` (or ``plan``, ``investigate``, ``review``): when the model activity
        makes that request, write the marker and pause, as a slow provider would (heartbeats go on);
    ``FAULT_PAUSE_BEFORE_SETTLE=1``
        wrap ``SettlementActivities.settle``: when the settlement activity starts, write the marker and
        pause before anything is sent to the commerce server.

    ``FAULT_MARKER`` names the marker file (JSON). The pause is a sleep that only ends when the test
    kills the process; the worker's event loop keeps running meanwhile (it still answers queries).
    """
    after_commerce = os.environ.get("FAULT_PAUSE_AFTER_COMMERCE")
    before_tool = os.environ.get("FAULT_PAUSE_BEFORE_TOOL")

    if after_commerce:
        original_call = CommerceSessionPool.call

        async def call(self: CommerceSessionPool, identity, tool: str, arguments: dict[str, Any], **options: Any):
            result = await original_call(self, identity, tool, arguments, **options)
            if tool == after_commerce:
                _mark({"where": f"after commerce {tool}", "pid": os.getpid(), "result": result})
                await asyncio.sleep(PAUSE_SECONDS)
            return result

        CommerceSessionPool.call = call  # type: ignore[method-assign]

    if before_tool:
        original_dispatch = ToolActivities.dispatch

        async def dispatch(self: ToolActivities, request):
            if request.name == before_tool:
                _mark({"where": f"before tool {request.name}", "pid": os.getpid(), "call_id": request.call_id})
                await asyncio.sleep(PAUSE_SECONDS)
            return await original_dispatch(self, request)

        ToolActivities.dispatch = dispatch  # type: ignore[method-assign]

    in_model = os.environ.get("FAULT_PAUSE_IN_MODEL")
    if in_model:
        original_request = getattr(ModelGateway, in_model)

        async def request(self: ModelGateway, model_request, **options: Any):
            _mark({"where": f"in model {in_model}", "pid": os.getpid(), "case_id": model_request.case_id})
            await asyncio.sleep(PAUSE_SECONDS)
            return await original_request(self, model_request, **options)

        setattr(ModelGateway, in_model, request)

    if os.environ.get("FAULT_PAUSE_BEFORE_SETTLE"):
        original_settle = SettlementActivities.settle

        async def settle(self: SettlementActivities, request: SettleRequest) -> RefundReceipt:
            _mark({"where": "before settle", "pid": os.getpid(), "approval_id": request.approval_id})
            await asyncio.sleep(PAUSE_SECONDS)
            return await original_settle(self, request)

        SettlementActivities.settle = settle  # type: ignore[method-assign]


if __name__ == "__main__":
    _install_pauses()
    worker.run(sys.argv[1:])
