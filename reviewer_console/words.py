"""What the console says, in English and Chinese: labels, sentences, amounts, durations and refusals.

A page speaks the reviewer's choice (the language switch in the header, kept in a cookie), else the
case's language, else English. Every sentence a reviewer reads is here (the Chinese of review refusals
and card labels in :mod:`reviewer_console.words_zh`); a code (a refusal's, an
error's) is shown beside it as a detail, never alone. Amounts lead with the currency and are computed
with integers; cents follow as a detail.
"""

from __future__ import annotations

from enum import StrEnum

from contracts.case import CaseStatus
from contracts.conversation import ReplySource
from contracts.knowledge import Language
from contracts.refusals import refusal_sentence
from reviewer_console.words_zh import LABELS_ZH, REFUSALS_ZH

LANGUAGE_COOKIE = "console_language"


class Text(StrEnum):
    BRAND = "brand"
    FICTIONAL = "fictional"
    SIGNED_IN_AS = "signed_in_as"
    SIGN_OUT = "sign_out"
    INBOX_TITLE = "inbox_title"
    INBOX_HINT = "inbox_hint"
    COLUMN_CASE = "column_case"
    COLUMN_AMOUNT = "column_amount"
    COLUMN_ORDER = "column_order"
    COLUMN_CUSTOMER = "column_customer"
    COLUMN_AGE = "column_age"
    COLUMN_TIME_LEFT = "column_time_left"
    COLUMN_APPROVALS = "column_approvals"
    NOTHING_WAITS = "nothing_waits"
    DECISIONS_WAIT = "decisions_wait"
    UNKNOWN_NOW = "unknown_now"
    UNCONFIRMED = "unconfirmed"
    LEFT = "left"
    EXPIRED = "expired"
    EXPIRES_SOON = "expires_soon"
    JUST_NOW = "just_now"
    CASE_TITLE = "case_title"
    STATUS = "status"
    CUSTOMER = "customer"
    ORDER = "order"
    QUESTION = "question"
    TIME_LEFT = "time_left"
    EXPIRES_AT = "expires_at"
    WHAT_APPROVING_DOES = "what_approving_does"
    DECIDE = "decide"
    SIGNS_EXACTLY = "signs_exactly"
    APPROVE = "approve"
    REJECT = "reject"
    YOU_APPROVED_WAITING = "you_approved_waiting"
    PROPOSAL_EXPIRED = "proposal_expired"
    PAGE_FOLLOWS = "page_follows"
    CASE_CHANGED = "case_changed"
    SETTLED = "settled"
    EXECUTED = "executed"
    ESCALATED_TO = "escalated_to"
    RECEIPT = "receipt"
    REFUNDED = "refunded"
    APPROVAL = "approval"
    AT = "at"
    SIGNED = "signed"
    SIGNED_BY_COMMERCE = "signed_by_commerce"
    UNSIGNED = "unsigned"
    ANSWER_RECEIVED = "answer_received"
    ANSWER_WILL_RECEIVE = "answer_will_receive"
    FACTS = "facts"
    CITED_POLICY = "cited_policy"
    REFUSED_ATTEMPTS = "refused_attempts"
    NONE_SO_FAR = "none_so_far"
    BACK_TO_INBOX = "back_to_inbox"
    SIGN_IN = "sign_in"
    SIGN_IN_HINT = "sign_in_hint"
    SIGN_IN_WITH_PASSKEY = "sign_in_with_passkey"
    ENROLL_TITLE = "enroll_title"
    ENROLL_HINT = "enroll_hint"
    CREATE_PASSKEY = "create_passkey"
    CODE = "code"
    AUTHENTICATOR_SILENT = "authenticator_silent"
    NO_ANSWER = "no_answer"
    TOUCH_TO_APPROVE = "touch_to_approve"
    TOUCH_TO_REJECT = "touch_to_reject"
    TOUCH_TO_SIGN_IN = "touch_to_sign_in"
    TOUCH_TO_ENROLL = "touch_to_enroll"
    ACCEPTED_APPROVE = "accepted_approve"
    ACCEPTED_REJECT = "accepted_reject"
    ACCEPTED_ACTION_APPROVE = "accepted_action_approve"
    ACCEPTED_ACTION_REJECT = "accepted_action_reject"
    REFUSED = "refused"
    NOT_WAITING = "not_waiting"
    NO_PASSKEY = "no_passkey"
    CHOOSE_DECISION = "choose_decision"
    SIGNED_OUT = "signed_out"
    CEREMONY_GONE = "ceremony_gone"
    NO_SUCH_CASE = "no_such_case"
    SIGNED_IN = "signed_in"
    ENROLLED = "enrolled"
    NOT_ENROLLED = "not_enrolled"
    SERVICE_UNAVAILABLE = "service_unavailable"
    SIMULATED = "simulated"
    CENTS = "cents"
    CONVERSATION = "conversation"
    CONVERSATION_HINT = "conversation_hint"
    EARLIER_ENTRIES = "earlier_entries"
    SPEAKER_CUSTOMER = "speaker_customer"
    SPEAKER_SERVICE = "speaker_service"
    FIRST_MESSAGE = "first_message"
    UNDER_CREDENTIAL = "under_credential"
    REPLY_TO = "reply_to"
    WAITING_CUSTOMER_UNTIL = "waiting_customer_until"
    WITHDRAWN_NOTICE = "withdrawn_notice"


_TEXTS: dict[Text, tuple[str, str]] = {
    Text.BRAND: ("Qinghe reviewer console", "清禾审批台"),
    Text.FICTIONAL: ("fictional merchant · simulated payments", "虚构商家 · 模拟付款"),
    Text.SIGNED_IN_AS: (
        "Signed in as {name} ({subject}, tenant {tenant})",
        "已登录：{name}（{subject}，租户 {tenant}）",
    ),
    Text.SIGN_OUT: ("Sign out", "退出"),
    Text.INBOX_TITLE: ("Waiting for approval", "等待审批"),
    Text.INBOX_HINT: (
        "Refunds of tenant {tenant} waiting for a reviewer, soonest expiry first. This list refreshes every "
        "{seconds} seconds.",
        "租户 {tenant} 等待审批的退款，最先到期的在前。此列表每 {seconds} 秒刷新一次。",
    ),
    Text.COLUMN_CASE: ("Case", "案件"),
    Text.COLUMN_AMOUNT: ("Amount", "金额"),
    Text.COLUMN_ORDER: ("Order", "订单"),
    Text.COLUMN_CUSTOMER: ("Customer", "客户"),
    Text.COLUMN_AGE: ("Age", "已等待"),
    Text.COLUMN_TIME_LEFT: ("Time left", "剩余时间"),
    Text.COLUMN_APPROVALS: ("Approvals", "审批"),
    Text.NOTHING_WAITS: ("Nothing waits for your approval.", "没有等待您审批的案件。"),
    Text.DECISIONS_WAIT: (
        "Decisions cannot be taken now: the service that runs the cases is not answering, so an approval "
        "would not be recorded. The cases below still wait; this page refreshes itself and you can decide "
        "once the service is back.",
        "现在无法做出决定：运行案件的服务没有响应，审批不会被记录。以下案件仍在等待；本页会自动刷新，服务恢复后即可审批。",
    ),
    Text.UNKNOWN_NOW: ("unknown until the service answers", "服务恢复后显示"),
    Text.UNCONFIRMED: (
        "as Temporal's case list shows it; not confirmed by the case until the service answers",
        "来自 Temporal 的案件列表；服务恢复前未经案件确认",
    ),
    Text.LEFT: ("{duration} left", "剩余 {duration}"),
    Text.EXPIRED: ("expired", "已过期"),
    Text.EXPIRES_SOON: ("expires soon", "即将过期"),
    Text.JUST_NOW: ("just now", "刚刚"),
    Text.CASE_TITLE: ("Case {case_id}", "案件 {case_id}"),
    Text.STATUS: ("Status", "状态"),
    Text.CUSTOMER: ("customer", "客户"),
    Text.ORDER: ("order", "订单"),
    Text.QUESTION: ("What the customer asked", "客户的问题"),
    Text.TIME_LEFT: ("Time left to decide", "剩余审批时间"),
    Text.EXPIRES_AT: ("expires at", "到期时间"),
    Text.WHAT_APPROVING_DOES: ("What approving does", "批准后会发生什么"),
    Text.DECIDE: ("Decide", "决定"),
    Text.SIGNS_EXACTLY: (
        "Your passkey signs exactly this refund: case {case_id}, digest {digest}, and your decision.",
        "您的通行密钥只签署这笔退款：案件 {case_id}，摘要 {digest}，以及您的决定。",
    ),
    Text.APPROVE: ("Approve with passkey", "用通行密钥批准"),
    Text.REJECT: ("Reject with passkey", "用通行密钥拒绝"),
    Text.YOU_APPROVED_WAITING: (
        "You approved; waiting for a second reviewer.",
        "您已批准；正在等待第二位审批人。",
    ),
    Text.PROPOSAL_EXPIRED: (
        "This proposal expired; it can no longer be approved or rejected.",
        "此提议已过期，不能再批准或拒绝。",
    ),
    Text.PAGE_FOLLOWS: ("This page updates itself when the case changes.", "案件变化时本页会自动更新。"),
    Text.CASE_CHANGED: ("The case has changed; showing it as it is now.", "案件已变化；现显示其最新状态。"),
    Text.SETTLED: ("Settled", "已结算"),
    Text.EXECUTED: ("Executed", "已执行"),
    Text.ESCALATED_TO: ("escalated to {reviewer}", "已升级给 {reviewer}"),
    Text.RECEIPT: ("receipt", "收据"),
    Text.REFUNDED: ("refunded", "已退款"),
    Text.APPROVAL: ("approval", "批准"),
    Text.AT: ("at", "时间"),
    Text.SIGNED: ("signed", "签名"),
    Text.SIGNED_BY_COMMERCE: ("signed by the commerce server", "由商务服务器签名"),
    Text.UNSIGNED: ("unsigned", "未签名"),
    Text.ANSWER_RECEIVED: ("The answer the customer received", "客户收到的回复"),
    Text.ANSWER_WILL_RECEIVE: ("The answer the customer will receive", "客户将收到的回复"),
    Text.FACTS: ("Facts the refund rule used", "退款规则使用的事实"),
    Text.CITED_POLICY: ("Cited policy", "引用的政策"),
    Text.REFUSED_ATTEMPTS: ("Refused review attempts", "被拒绝的审批尝试"),
    Text.NONE_SO_FAR: ("None so far.", "暂无。"),
    Text.BACK_TO_INBOX: ("Back to the inbox", "返回收件箱"),
    Text.SIGN_IN: ("Sign in", "登录"),
    Text.SIGN_IN_HINT: (
        "Sign in with the passkey you enrolled for this console.",
        "请使用您为本控制台注册的通行密钥登录。",
    ),
    Text.SIGN_IN_WITH_PASSKEY: ("Sign in with a passkey", "用通行密钥登录"),
    Text.ENROLL_TITLE: ("Enroll a passkey", "注册通行密钥"),
    Text.ENROLL_HINT: (
        "This link works once, in the first browser that opens it. Your authenticator will ask you to verify "
        "yourself (PIN, fingerprint or face); only the passkey's public key is published in the support directory.",
        "此链接只能使用一次，且只在第一个打开它的浏览器中有效。您的验证器会要求验证身份（PIN、指纹或面容）；"
        "支持目录中只发布通行密钥的公钥。",
    ),
    Text.CREATE_PASSKEY: ("Create a passkey", "创建通行密钥"),
    Text.CODE: ("code", "代码"),
    Text.AUTHENTICATOR_SILENT: (
        "Your authenticator did not confirm (it was cancelled, timed out, or could not verify you); nothing was sent.",
        "您的验证器没有确认（已取消、超时或无法验证您的身份）；没有发送任何内容。",
    ),
    Text.NO_ANSWER: ("The console gave no answer; try again.", "控制台没有响应；请重试。"),
    Text.TOUCH_TO_APPROVE: ("Touch your authenticator to approve this refund.", "请触摸验证器以批准这笔退款。"),
    Text.TOUCH_TO_REJECT: ("Touch your authenticator to reject this refund.", "请触摸验证器以拒绝这笔退款。"),
    Text.TOUCH_TO_SIGN_IN: ("Touch your authenticator to sign in.", "请触摸验证器以登录。"),
    Text.TOUCH_TO_ENROLL: ("Touch your authenticator to create the passkey.", "请触摸验证器以创建通行密钥。"),
    Text.ACCEPTED_APPROVE: ("You approved this refund; it is being paid.", "您已批准这笔退款；正在付款。"),
    Text.ACCEPTED_REJECT: ("You rejected this refund; nothing will be paid.", "您已拒绝这笔退款；不会付款。"),
    Text.ACCEPTED_ACTION_APPROVE: (
        "You approved this change; it is carried out once everyone the merchant's policy names has agreed.",
        "您已批准这项变更；商家政策要求的各方都同意后即执行。",
    ),
    Text.ACCEPTED_ACTION_REJECT: (
        "You rejected this change; nothing will be changed.",
        "您已拒绝这项变更；不会做任何更改。",
    ),
    Text.REFUSED: ("Your review was refused: {sentence}.", "您的审批被拒绝：{sentence}。"),
    Text.NOT_WAITING: ("The case is not waiting for a review.", "此案件没有在等待审批。"),
    Text.NO_PASSKEY: (
        "You have no passkey enrolled; ask for an enrollment link.",
        "您还没有注册通行密钥；请索取注册链接。",
    ),
    Text.CHOOSE_DECISION: ("Choose approve or reject.", "请选择批准或拒绝。"),
    Text.SIGNED_OUT: ("Your session has ended; sign in again.", "您的会话已结束；请重新登录。"),
    Text.CEREMONY_GONE: (
        "This passkey request expired or was already used; start again.",
        "此通行密钥请求已过期或已被使用；请重新开始。",
    ),
    Text.NO_SUCH_CASE: ("No such case.", "没有这个案件。"),
    Text.SIGNED_IN: ("Signed in as {name}.", "已登录：{name}。"),
    Text.ENROLLED: ("Passkey enrolled for {subject}. Sign in with it.", "已为 {subject} 注册通行密钥。请用它登录。"),
    Text.NOT_ENROLLED: ("The passkey was not enrolled: {reason}", "通行密钥未注册：{reason}"),
    Text.SERVICE_UNAVAILABLE: (
        "The case service cannot be reached just now; nothing changed. Try again in a moment.",
        "暂时无法连接案件服务；没有任何改变。请稍后重试。",
    ),
    Text.SIMULATED: ("simulated payment", "模拟付款"),
    Text.CENTS: ("{cents} cents", "{cents} 分"),
    Text.CONVERSATION: ("The conversation", "对话记录"),
    Text.CONVERSATION_HINT: (
        "Every message and reply, oldest first, as the case recorded it.",
        "案件记录的全部消息和回复，按时间先后排列。",
    ),
    Text.EARLIER_ENTRIES: (
        "{count} earlier entries are kept in the case's earlier records and histories (starter.py audit).",
        "另有 {count} 条较早的记录保存在案件较早的记录和历史中（starter.py audit）。",
    ),
    Text.SPEAKER_CUSTOMER: ("customer {subject}", "客户 {subject}"),
    Text.SPEAKER_SERVICE: ("service", "客服"),
    Text.FIRST_MESSAGE: ("the case's question, under the applicant token", "案件的问题，使用申请人令牌"),
    Text.UNDER_CREDENTIAL: ("under {issuer} credential {fingerprint}", "凭证：{issuer}，指纹 {fingerprint}"),
    Text.REPLY_TO: ("reply to message {turn}, written by: {source}", "回复第 {turn} 条消息，撰写者：{source}"),
    Text.WAITING_CUSTOMER_UNTIL: (
        "The service asked the customer something and waits for the answer until {until}; then the case closes.",
        "客服向客户提出了问题，正在等待回复，截止 {until}；届时案件将关闭。",
    ),
    Text.WITHDRAWN_NOTICE: (
        "The customer withdrew the request before anyone approved it; nothing was paid.",
        "客户在审批前撤回了请求；没有付款。",
    ),
}

_SOURCES: dict[ReplySource, tuple[str, str]] = {
    ReplySource.MODEL_DRAFT: ("model draft (reviewed)", "模型草稿（已审核）"),
    ReplySource.RECEIPT: ("receipt", "收据"),
    ReplySource.STATUS_NOTICE: ("status notice", "状态通知"),
    ReplySource.CASE_RECORDS: ("case records", "案件记录"),
}

_STATUS: dict[CaseStatus, tuple[str, str]] = {
    CaseStatus.QUEUED: ("queued", "排队中"),
    CaseStatus.RUNNING: ("working", "处理中"),
    CaseStatus.WAITING_APPROVAL: ("waiting for approval", "等待审批"),
    CaseStatus.WAITING_CUSTOMER: ("waiting for the customer", "等待客户回复"),
    CaseStatus.COMPLETED: ("completed", "已完成"),
    CaseStatus.NEEDS_INPUT: ("needs the customer's input", "需要客户补充信息"),
    CaseStatus.NEEDS_HUMAN: ("handed to a person", "已转人工"),
    CaseStatus.REJECTED: ("rejected", "已拒绝"),
    CaseStatus.EXPIRED: ("expired", "已过期"),
    CaseStatus.WITHDRAWN: ("withdrawn by the customer", "客户已撤回"),
    CaseStatus.FAILED: ("failed", "失败"),
}


def parse_language(value: str | None) -> Language | None:
    """A console language from a cookie or form value; anything else is None (no choice made)."""
    try:
        return Language(value) if value else None
    except ValueError:
        return None


class Words:
    """The console's words in one language: ``words(Text.X, **values)``."""

    def __init__(self, language: Language) -> None:
        self.language = language

    @property
    def chinese(self) -> bool:
        return self.language is Language.ZH

    def __call__(self, key: Text, **values: object) -> str:
        english, chinese = _TEXTS[key]
        return (chinese if self.chinese else english).format(**values)

    def status(self, status: CaseStatus) -> str:
        english, chinese = _STATUS[status]
        return chinese if self.chinese else english

    def status_named(self, name: str | None) -> str:
        """A status as visibility lists it (its value, or nothing): its words, else the value as it is."""
        try:
            return self.status(CaseStatus(name)) if name else "-"
        except ValueError:
            return name or "-"

    def source(self, source: ReplySource | None) -> str:
        """Who wrote a service reply: model draft, receipt, status notice or case records."""
        if source is None:
            return "-"
        english, chinese = _SOURCES[source]
        return chinese if self.chinese else english

    def refusal(self, code: str, *, reviewer: str | None = None) -> str:
        """The sentence for a review refusal ``code``, in this language."""
        template = REFUSALS_ZH.get(code) if self.chinese else None
        if template is None:
            return refusal_sentence(code, reviewer=reviewer)
        return template.format(reviewer=reviewer or "签名人")

    def label(self, english: str) -> str:
        """A card or fact label (``refund``, ``paid items``) in this language."""
        return LABELS_ZH.get(english, english) if self.chinese else english

    def money(self, cents: int, currency: str) -> str:
        """``CNY 1,290.00``: the currency first, integer arithmetic, never a float."""
        return f"{currency} {self.amount(cents)}"

    def amount(self, cents: int) -> str:
        """``1,290.00``: an amount whose currency is not known here."""
        sign = "-" if cents < 0 else ""
        whole, part = divmod(abs(cents), 100)
        return f"{sign}{whole:,}.{part:02d}"

    def cents(self, cents: int) -> str:
        return self(Text.CENTS, cents=f"{cents:,}")

    def duration(self, seconds: float) -> str:
        """``4 min 05 s`` / ``4 分 05 秒``, ``2 h 03 min`` / ``2 小时 03 分``: whole units for a person."""
        total = max(int(seconds), 0)
        hours, rest = divmod(total, 3600)
        minutes, secs = divmod(rest, 60)
        if self.chinese:
            return f"{hours} 小时 {minutes:02d} 分" if hours else f"{minutes} 分 {secs:02d} 秒"
        return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"

    def time_left(self, seconds: float) -> str:
        return self(Text.LEFT, duration=self.duration(seconds)) if seconds > 0 else self(Text.EXPIRED)

    def client_texts(self) -> dict[str, str]:
        """What console.js says by itself (no server answer to carry a sentence), in this language."""
        keys = (Text.AUTHENTICATOR_SILENT, Text.NO_ANSWER, Text.PROPOSAL_EXPIRED, Text.CASE_CHANGED, Text.CODE)
        english, chinese = _TEXTS[Text.LEFT]
        left = chinese if self.chinese else english  # console.js fills in {duration}
        return {key.value: self(key) for key in keys} | {"expired": self(Text.EXPIRED), "left": left}


def choose_language(chosen: str | None, *, case_language: Language | None = None) -> Language:
    """The reviewer's choice if they made one, else the case's language, else English."""
    return parse_language(chosen) or case_language or Language.EN
