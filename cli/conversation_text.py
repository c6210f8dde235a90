"""The sentences the terminal's conversation commands (``chat``, ``say``, and ``ask`` when the case asks
something back) print, in English and Chinese: what a case's status means, and what to do next.

Codes stay in the lines meant for scripts (the case card's ``status`` row keeps the status value
beside its sentence); a person reads a sentence in their language. Every status has one sentence in
each language (a test checks it), so a status added to :class:`contracts.case.CaseStatus` without
one fails loudly, not with a bare code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from contracts.case import CaseStatus
from contracts.knowledge import Language

STATUS_SENTENCES: dict[CaseStatus, tuple[str, str]] = {
    CaseStatus.QUEUED: ("started; no worker has taken it up yet", "已创建，尚未开始处理"),
    CaseStatus.RUNNING: ("the service is working on it", "正在处理中"),
    CaseStatus.WAITING_APPROVAL: (
        "a proposal waits for approval; nothing is paid or changed before it is approved",
        "方案正在等待审批；审批通过前不会付款或做任何更改",
    ),
    CaseStatus.WAITING_CUSTOMER: (
        "the service asked the customer a question and waits for the answer",
        "客服向客户提出了问题，正在等待答复",
    ),
    CaseStatus.COMPLETED: ("finished", "已完成"),
    CaseStatus.NEEDS_INPUT: (
        "closed: the service needed more from the customer",
        "已关闭：需要客户提供更多信息",
    ),
    CaseStatus.NEEDS_HUMAN: ("handed to a person of the support team", "已转交人工客服处理"),
    CaseStatus.REJECTED: ("a reviewer rejected the proposal; nothing was paid", "审核人拒绝了该方案；未付款"),
    CaseStatus.EXPIRED: (
        "the proposal expired before anyone approved it; nothing was paid",
        "方案在审批前已过期；未付款",
    ),
    CaseStatus.WITHDRAWN: (
        "the customer withdrew the request before anyone approved it; nothing was paid",
        "客户在审批前撤回了申请；未付款",
    ),
    CaseStatus.FAILED: ("the case failed; its reason says why", "案件处理失败；原因见说明"),
}


def status_sentence(status: CaseStatus, language: Language = Language.EN) -> str:
    english, chinese = STATUS_SENTENCES[status]
    return chinese if language is Language.ZH else english


class Line(StrEnum):
    """The conversation commands' own sentences; ``{name}`` fields are filled in by :func:`line`."""

    SERVICE = "service"
    CHAT_OPENS = "chat_opens"
    CHAT_CONTINUES = "chat_continues"
    CASE_STARTED = "case_started"
    WAITS_FOR_ANSWER = "waits_for_answer"
    WAITS_FOR_REVIEWER = "waits_for_reviewer"
    STILL_WRITE = "still_write"
    CASE_ENDED = "case_ended"
    NEXT_STARTS_NEW = "next_starts_new"
    GOES_ON = "goes_on"
    CHAT_LEFT = "chat_left"
    CONTINUE_WITH = "continue_with"
    NO_CASE = "no_case"
    NO_REPLY_YET = "no_reply_yet"
    REFUSED = "refused"
    ANSWER_WITH = "answer_with"
    INTERRUPTED = "interrupted"


_LINES: dict[Line, tuple[str, str]] = {
    Line.SERVICE: ("service", "客服"),
    Line.CHAT_OPENS: (
        "Chat as {subject} ({tenant}). Write a message and press Enter; an empty line ends the chat "
        "(a case goes on without it).",
        "以 {subject}（{tenant}）的身份对话。输入消息后按回车发送；输入空行结束对话（案件会继续进行）。",
    ),
    Line.CHAT_CONTINUES: ("Continuing case {case}: {status}.", "继续案件 {case}：{status}。"),
    Line.CASE_STARTED: ("Case {case} started.", "案件 {case} 已创建。"),
    Line.WAITS_FOR_ANSWER: (
        "Case {case} waits for your answer{until}.",
        "案件 {case} 正在等待您的答复{until}。",
    ),
    Line.WAITS_FOR_REVIEWER: (
        "Case {case}: a proposal waits for approval; nothing is paid or changed before it is approved.",
        "案件 {case}：方案正在等待审批；审批通过前不会付款或做任何更改。",
    ),
    Line.STILL_WRITE: (
        'You can still write: ask for news, or write "withdraw" to withdraw the request.',
        "您仍可以继续留言：询问进展，或输入“撤回”撤回申请。",
    ),
    Line.CASE_ENDED: ("Case {case} has ended: {status}.", "案件 {case} 已结束：{status}。"),
    Line.NEXT_STARTS_NEW: ("Your next message starts a new case.", "您的下一条消息将创建新的案件。"),
    Line.GOES_ON: ("Case {case} goes on: {status}.", "案件 {case} 仍在进行：{status}。"),
    Line.CHAT_LEFT: ("Case {case} goes on without this chat.", "案件 {case} 会继续进行，不受本次对话结束影响。"),
    Line.CONTINUE_WITH: ("Continue it with:", "继续对话："),
    Line.NO_CASE: ("Chat ended; no case was started.", "对话已结束，未创建案件。"),
    Line.NO_REPLY_YET: (
        "No reply to your message yet after {seconds} s; your message was taken and case {case} goes on.",
        "{seconds} 秒内尚未收到回复；您的消息已送达，案件 {case} 仍在进行。",
    ),
    Line.REFUSED: ("Not sent: {sentence}", "未发送：{sentence}"),
    Line.ANSWER_WITH: ("Answer with:", "回复方式："),
    Line.INTERRUPTED: (
        "Interrupted: nothing more is waited for here.",
        "已中断：此处不再等待。",
    ),
}


def line(name: Line, language: Language = Language.EN, **fields: str) -> str:
    english, chinese = _LINES[name]
    return (chinese if language is Language.ZH else english).format(**fields)


def until_text(until: datetime | None, language: Language = Language.EN) -> str:
    """`` until 2026-12-08 09:00 UTC`` (the leading blank included), or nothing when there is no time."""
    if until is None:
        return ""
    when = until.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"（截止 {when}）" if language is Language.ZH else f" until {when}"
