"""The one order id a question names is a host fact: the case is bound to it before the plan.

A real model (llama-cpp-python with a small GGUF) planned the Chinese refund question naming QH-1002
with ``order_id: null``, and every lookup of QH-1002 that followed was refused. The workflow now binds
the named id whatever the plan leaves out; a plan naming another id still ends the case, and a
refused lookup records which order id was asked for.
"""

from __future__ import annotations

import json

import pytest

from contracts.case import CaseStatus
from tests.adversarial.adversary import ScriptedWorld, tool_runs
from tests.adversarial.provider import call, json_reply, text_reply, tool_calls

pytestmark = pytest.mark.slow

ZH_REFUND = "我想退订单 QH-1002 的台灯，能退多少钱？"
PLAN_WITHOUT_ORDER = {
    "intent": "refund",
    "order_id": None,
    "action_requested": False,
    "queries": ["退款 期限"],
    "milestones": ["读取订单"],
}


async def test_a_plan_without_the_named_order_is_bound_to_it_and_its_lookups_run(adversary: ScriptedWorld) -> None:
    adversary.provider.script("plan", json_reply(PLAN_WITHOUT_ORDER))
    adversary.provider.script(
        "investigate",
        tool_calls(call("get_order", {"order_id": "QH-1002"}, "t1"), call("get_order", {"order_id": "QH-1003"}, "t2")),
        text_reply("The evidence suffices."),
    )

    handle, view = await adversary.run(ZH_REFUND, language="zh")

    [plan_request] = [r for r in adversary.provider.requests if r.kind == "plan"]
    sent = json.loads(plan_request.body["messages"][-1]["content"])
    assert sent["order_id_named_in_question"] == "QH-1002"
    assert await adversary.event_details(handle, "planned") == ["intent=refund order=QH-1002 action=False"]
    assert ("get_order", {"order_id": "QH-1002"}) in tool_runs(await handle.fetch_history())
    refused = await adversary.event_details(handle, "tool_refused")
    assert refused == ["get_order: order_not_bound_to_case (order_id=QH-1003)"]
    assert view.status is not CaseStatus.FAILED
    await adversary.assert_nothing_of_other_customers(handle, view)


async def test_a_plan_naming_another_order_still_ends_the_case(adversary: ScriptedWorld) -> None:
    adversary.provider.script("plan", json_reply(PLAN_WITHOUT_ORDER | {"order_id": "QH-1003"}))

    handle, view = await adversary.run(ZH_REFUND, language="zh")

    assert view.status is CaseStatus.NEEDS_HUMAN
    assert tool_runs(await handle.fetch_history()) == []
    adversary.assert_no_commerce_writes()
