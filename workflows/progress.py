"""What a customer watches while the case works: progress items on the case's workflow stream.

Workflow code (publishing is workflow state, not a command). Every sentence is written here, by code,
in the case's language, from host facts (the bound order id, the proposal's expiry, the receipt); the
one text that is not is a reply the deliver gate admitted, published exactly as the transcript holds
it. The model's tool arguments (a search query) and the customer's words never appear.

The stream (``temporalio.contrib.workflow_streams``) also registers a publish signal through which any
client could append items; :func:`refuse_outside_publishes` replaces its handler, so only the workflow
writes what a customer reads.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

with workflow.unsafe.imports_passed_through():
    from contracts.case_input import CaseState
    from contracts.conversation import PROGRESS_TOPIC, ProgressItem, ProgressKind
    from contracts.knowledge import Language
    from contracts.tools import ToolName

OUTSIDE_PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""The stream's own publish signal (``temporalio.contrib.workflow_streams``), refused here."""

_TEXT: dict[ProgressKind, tuple[str, str]] = {
    ProgressKind.MESSAGE_RECEIVED: ("Message received.", "已收到您的消息。"),
    ProgressKind.PLANNING: ("Reading your message and planning the next steps.", "正在阅读您的消息并规划下一步。"),
    ProgressKind.READING_ORDER: ("Reading order {order}.", "正在查看订单 {order}。"),
    ProgressKind.CHECKING_POLICY: ("Checking the policy.", "正在查阅相关政策。"),
    ProgressKind.LOOKING_UP: ("Looking up your records.", "正在查询您的记录。"),
    ProgressKind.DRAFTING: ("Drafting the answer.", "正在起草答复。"),
    ProgressKind.REVIEWING: ("Checking the draft before it is sent.", "正在发送前核对答复。"),
    ProgressKind.WAITING_FOR_CUSTOMER: (
        "Waiting for your answer until {until} UTC.",
        "正在等待您的答复，截止时间为 UTC {until}。",
    ),
    ProgressKind.WAITING_FOR_REVIEWER: (
        "Waiting for a reviewer to approve the refund; the proposal expires at {until} UTC.",
        "正在等待审核人员批准退款；该方案将于 UTC {until} 过期。",
    ),
    ProgressKind.WITHDRAWN: ("Your request was withdrawn; nothing was paid.", "您的申请已撤回，未进行任何付款。"),
    ProgressKind.CLOSED: ("This conversation is closed.", "此对话已结束。"),
}

_ORDER_TOOLS = frozenset({ToolName.GET_ORDER, ToolName.GET_SHIPMENT, ToolName.GET_INVOICE})
_POLICY_TOOLS = frozenset({ToolName.SEARCH_KNOWLEDGE, ToolName.READ_KNOWLEDGE, ToolName.LOAD_SKILL})


def refuse_outside_publishes() -> None:
    """Drop every publish a client sends to the stream (call right after constructing the stream)."""

    def dropped(*_: object) -> None:
        workflow.logger.warning("a client tried to publish to a case's progress stream; dropped")

    workflow.set_signal_handler(OUTSIDE_PUBLISH_SIGNAL, dropped)


def prior_stream(offset: int) -> WorkflowStreamState | None:
    """The stream state a continued run starts from: no items (they were read in earlier runs; the
    transcript holds every reply), only the offset, so a reader resuming by offset goes on."""
    return WorkflowStreamState(log=[], base_offset=offset, publishers={}) if offset else None


class Progress:
    def __init__(self, stream: WorkflowStream, state: CaseState) -> None:
        self._topic = stream.topic(PROGRESS_TOPIC, type=ProgressItem)
        self._stream = stream
        self._s = state
        self._last: tuple[ProgressKind, str, int] | None = None

    def offset(self) -> int:
        return self._stream._on_offset()

    def say(self, kind: ProgressKind, *, order: str | None = None, until: datetime | None = None) -> None:
        english, chinese = _TEXT[kind]
        template = chinese if self._s.case.language is Language.ZH else english
        stamp = until.strftime("%Y-%m-%d %H:%M") if until is not None else ""
        self.publish(kind, template.format(order=order or "", until=stamp), until=until)

    def tool(self, name: str, order: str | None) -> None:
        if name in _ORDER_TOOLS and order is not None:
            self.say(ProgressKind.READING_ORDER, order=order)
        elif name in _POLICY_TOOLS:
            self.say(ProgressKind.CHECKING_POLICY)
        elif name == ToolName.CALCULATE_REFUND:
            self.publish(ProgressKind.LOOKING_UP, self._words("Calculating the refund.", "正在计算退款金额。"))
        else:
            self.say(ProgressKind.LOOKING_UP)

    def _words(self, english: str, chinese: str) -> str:
        return chinese if self._s.case.language is Language.ZH else english

    def publish(self, kind: ProgressKind, text: str, *, until: datetime | None = None) -> None:
        """Publish one item; the same step said again in the same turn (three policy reads) is said once."""
        s = self._s
        if (kind, text, s.conversation.turn) == self._last:
            return
        self._last = (kind, text, s.conversation.turn)
        item = ProgressItem(
            kind=kind,
            text=text,
            at=workflow.now(),
            turn=s.conversation.turn,
            status=s.lifecycle.status,
            until=until,
        )
        self._topic.publish(item)
