"""What a customer reads when the channel itself refuses a request, in English and Chinese.

A refused message of a conversation reads :func:`contracts.conversation.refusal_sentence` (the same
sentences the case uses); the channel adds its own few: not signed in, no such conversation, too many
requests, a request body over the limit, the service unavailable, and the demo sign-in's unknown
customer. Every answer is one sentence; the code travels beside it (``refusal``), never alone.
"""

from __future__ import annotations

from enum import StrEnum

from starlette.requests import Request

from contracts.conversation import MessageRefusal, refusal_sentence
from contracts.knowledge import Language


class ChannelRefusal(StrEnum):
    """Why the channel refused a request on its own (before, or instead of, asking the case)."""

    NOT_SIGNED_IN = "not_signed_in"
    NOT_FOUND = "conversation_not_found"
    TOO_MANY_REQUESTS = "too_many_requests"
    BODY_TOO_LARGE = "request_too_large"
    UNAVAILABLE = "service_unavailable"
    UNKNOWN_DEMO_CUSTOMER = "unknown_demo_customer"
    NO_SUCH_PAGE = "no_such_page"
    NOT_TAKEN = "message_not_taken"
    ALREADY_STARTED = "conversation_already_started"


_SENTENCES: dict[ChannelRefusal, tuple[str, str]] = {
    ChannelRefusal.NOT_SIGNED_IN: (
        "Please sign in: this request carries no credential (Authorization: Bearer ...).",
        "请先登录：此请求未携带凭证（Authorization: Bearer ...）。",
    ),
    ChannelRefusal.NOT_FOUND: (
        "No such conversation.",
        "没有这个对话。",
    ),
    ChannelRefusal.TOO_MANY_REQUESTS: (
        "Too many requests. Please wait {seconds} seconds and try again.",
        "请求过于频繁，请等待 {seconds} 秒后再试。",
    ),
    ChannelRefusal.BODY_TOO_LARGE: (
        "This request is larger than {limit} bytes and was not read.",
        "此请求超过 {limit} 字节，未被读取。",
    ),
    ChannelRefusal.UNAVAILABLE: (
        "The support service cannot answer right now. Please try again in a minute.",
        "客服系统暂时无法应答，请稍后再试。",
    ),
    ChannelRefusal.UNKNOWN_DEMO_CUSTOMER: (
        "The demo directory lists no customer of that name.",
        "演示目录中没有这位客户。",
    ),
    ChannelRefusal.NOT_TAKEN: (
        "This conversation cannot take a message now; nothing was added to it.",
        "此对话目前无法接收消息，未添加任何内容。",
    ),
    ChannelRefusal.ALREADY_STARTED: (
        "This sign-in already started a conversation with another first message. Please sign in again for a new one.",
        "此登录凭证已用于以另一条首条消息开始的对话。如需新对话，请重新登录。",
    ),
    ChannelRefusal.NO_SUCH_PAGE: (
        "There is nothing at this address.",
        "此地址没有内容。",
    ),
}


def sentence(refusal: ChannelRefusal | MessageRefusal, language: Language, **values: object) -> str:
    """The sentence for ``refusal`` in ``language``, its ``{placeholders}`` filled from ``values``."""
    if isinstance(refusal, MessageRefusal):
        return refusal_sentence(refusal, language)
    english, chinese = _SENTENCES[refusal]
    return (chinese if language is Language.ZH else english).format(**values)


def request_language(request: Request) -> Language:
    """The reader's language before a case says it: Chinese when ``Accept-Language`` prefers ``zh``
    over ``en`` (the first of the two it names), else English."""
    for part in request.headers.get("accept-language", "").split(","):
        tag = part.split(";", 1)[0].strip().lower()
        if tag.startswith("zh"):
            return Language.ZH
        if tag.startswith("en"):
            return Language.EN
    return Language.EN
