"""The terminal's conversation commands without a server: every status has an exit code and a sentence
in both languages, progress items and replies print as short plain lines (no terminal escapes), what
follows a reply says what the customer can do, and bad arguments are one line, exit 2, nothing sent."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cli.conversation_commands import check_message
from cli.conversation_render import (
    after_turn_lines,
    display_width,
    plain,
    progress_line,
    reply_lines,
    shows_as_progress,
    wrap,
)
from cli.conversation_text import STATUS_SENTENCES, status_sentence
from cli.exit_codes import ExitCode, exit_code_for
from cli.main import _run_app
from cli.render import case_card_lines, customer_turn_lines
from contracts.case import CaseStatus, Phase
from contracts.conversation import (
    MAX_MESSAGE_CHARS,
    ConversationEntry,
    ProgressItem,
    ProgressKind,
    ReplySource,
    Speaker,
    TurnReply,
)
from contracts.credentials import ISSUER_KID
from contracts.errors import ContractError
from contracts.knowledge import Language
from keystore import DIRECTORY_ENV, create_demo_directory, private_key_path
from tests.reviewer_console.console_double import waiting_view

STARTER = "python starter.py --profile alice"
AT = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)


def item(kind: ProgressKind, text: str, *, status: CaseStatus = CaseStatus.RUNNING, until: datetime | None = None):
    return ProgressItem(kind=kind, text=text, at=AT, turn=1, status=status, until=until)


def service_entry(text: str, *, turn: int = 1) -> ConversationEntry:
    return ConversationEntry(
        seq=2, speaker=Speaker.SERVICE, text=text, at=AT, turn=turn, source=ReplySource.MODEL_DRAFT
    )


def answer(status: CaseStatus, reply: ConversationEntry | None = None) -> TurnReply:
    return TurnReply(case_id="c1", turn=1, status=status, reply=reply, progress_offset=4)


# --- statuses: an exit code and a sentence each ---


def test_every_status_has_an_exit_code_and_the_customers_turn_is_the_old_needs_input_code() -> None:
    codes = {status: exit_code_for(status) for status in CaseStatus}  # a missing status raises KeyError
    assert codes[CaseStatus.WAITING_CUSTOMER] is codes[CaseStatus.NEEDS_INPUT] is ExitCode.NEEDS_PERSON
    assert codes[CaseStatus.WITHDRAWN] is codes[CaseStatus.WAITING_APPROVAL] is ExitCode.DECIDED


def test_every_status_has_a_sentence_in_english_and_chinese_not_its_code() -> None:
    assert set(STATUS_SENTENCES) == set(CaseStatus)
    for status in CaseStatus:
        english, chinese = status_sentence(status), status_sentence(status, Language.ZH)
        assert english and chinese and english != chinese and status.value not in (english, chinese)
        assert any("\u4e00" <= ch <= "\u9fff" for ch in chinese)
    assert "nothing was paid" in status_sentence(CaseStatus.WITHDRAWN)


def test_the_case_card_says_what_its_status_means_beside_the_code() -> None:
    view = waiting_view("c1").model_copy(update={"status": CaseStatus.WITHDRAWN})
    lines = case_card_lines(view)
    start = next(n for n, text in enumerate(lines) if text.startswith("  status "))
    row = " ".join(text.strip() for text in lines[start : start + 2])  # the row and its wrapped rest
    assert row.split()[1] == "withdrawn:" and row.endswith("before anyone approved it; nothing was paid")
    assert all(len(text) <= 80 for text in lines)


# --- progress and replies as plain lines ---


def test_a_progress_item_is_one_short_line() -> None:
    assert progress_line(item(ProgressKind.READING_ORDER, "Reading order QH-1001.")) == ["… Reading order QH-1001."]
    until = datetime(2026, 12, 8, 9, 30, tzinfo=UTC)
    waiting = item(ProgressKind.WAITING_FOR_REVIEWER, "Waiting for a reviewer\nuntil 09:30 UTC.", until=until)
    assert progress_line(waiting) == ["… Waiting for a reviewer until 09:30 UTC."]
    long = progress_line(item(ProgressKind.LOOKING_UP, "x " * 400))
    assert len(long) == 2 and long[-1].endswith("x…") and all(len(text) <= 80 for text in long)
    assert long[1].startswith("  x")


def test_chinese_wraps_at_80_columns_counting_each_character_as_two() -> None:
    clause = "根据青禾条款（退款期限与仓库签收）：在提出自动退款方案之前，"
    reply = clause + "退回的商品必须已由青禾退货仓库签收并完成入库登记。"
    lines = reply_lines(service_entry(reply * 2), Language.ZH)
    assert lines[0].startswith("客服: 根据") and all(text.startswith("      ") for text in lines[1:])
    assert all(display_width(text) <= 80 for text in lines) and len(lines) >= 3
    assert "".join(text.strip() for text in lines) == "客服: " + reply * 2
    # an id, a digest or a path is never broken, even when longer than a line
    digest = "a" * 90
    assert wrap(f"digest {digest} ok", rest="  ") == ["digest", f"  {digest}", "  ok"]


def test_a_reply_is_printed_after_the_progress_lines_not_among_them() -> None:
    assert not shows_as_progress(item(ProgressKind.REPLY, "Which order is this about?"))
    assert shows_as_progress(item(ProgressKind.PLANNING, "planning"))


def test_terminal_escapes_in_model_text_never_reach_the_terminal() -> None:
    hostile = "Refund \x1b[2J\x1b]0;owned\x07done\u202e [b]bold[/b]\r\nline two"
    assert plain(hostile) == "Refund [2J]0;owneddone [b]bold[/b] line two"
    lines = reply_lines(service_entry(hostile))
    assert all("\x1b" not in text and "\x07" not in text and "\r" not in text for text in lines)
    assert lines[0].startswith("service: Refund") and lines[-1].strip() == "line two"


def test_a_long_reply_wraps_at_80_columns_under_its_label() -> None:
    lines = reply_lines(service_entry("We can refund 12900 cents for QH-1001. " * 6))
    assert lines[0].startswith("service: ") and all(text.startswith(" " * 9) for text in lines[1:])
    assert all(len(text) <= 80 for text in lines) and len(lines) > 2
    assert reply_lines(service_entry("好的"), Language.ZH) == ["客服: 好的"]


# --- what follows a reply ---


def test_the_customers_turn_says_until_when_and_how_to_answer() -> None:
    until = datetime(2026, 12, 8, 9, 30, tzinfo=UTC)
    lines = after_turn_lines(answer(CaseStatus.WAITING_CUSTOMER), STARTER, until=until)
    assert lines[0] == "Case c1 waits for your answer until 2026-12-08 09:30 UTC."
    assert lines[-1] == f'  {STARTER} say c1 "…"'
    in_chat = after_turn_lines(answer(CaseStatus.WAITING_CUSTOMER), STARTER, chat=True)
    assert in_chat == ["Case c1 waits for your answer."]


def test_a_waiting_proposal_says_the_customer_may_still_write_or_withdraw() -> None:
    lines = after_turn_lines(answer(CaseStatus.WAITING_APPROVAL), STARTER, Language.ZH)
    assert "等待审批" in lines[0] and "撤回" in lines[1]


def test_an_ended_case_says_so_and_in_a_chat_the_next_line_starts_a_new_case() -> None:
    lines = after_turn_lines(answer(CaseStatus.WITHDRAWN), STARTER, chat=True)
    assert lines == [
        "Case c1 has ended: the customer withdrew the request before anyone approved it;",
        "  nothing was paid.",
        "Your next message starts a new case.",
    ]
    assert len(after_turn_lines(answer(CaseStatus.COMPLETED), STARTER)) == 1


def test_ask_shows_the_services_question_and_the_say_command_when_the_case_waits_for_the_customer() -> None:
    view = waiting_view("c1").model_copy(
        update={
            "status": CaseStatus.WAITING_CUSTOMER,
            "phase": Phase.WAITING_CUSTOMER,
            "conversation": [service_entry("Which order is this about?")],
            "waiting_until": datetime(2026, 12, 8, 9, 30, tzinfo=UTC),
        }
    )
    lines = customer_turn_lines(view, STARTER)
    assert lines[0] == "service: Which order is this about?"
    assert lines[1] == "Case c1 waits for your answer until 2026-12-08 09:30 UTC."
    assert f'  {STARTER} say c1 "…"' in lines and f"  {STARTER} chat --case c1" in lines
    assert customer_turn_lines(waiting_view("c1"), STARTER) == []


# --- bad arguments: one line, exit 2, nothing sent ---


def test_a_message_is_checked_before_anything_is_sent() -> None:
    assert check_message("  It is order QH-1001 \n") == "It is order QH-1001"
    with pytest.raises(ContractError, match="the message is empty"):
        check_message(" \t ")
    with pytest.raises(ContractError, match=f"longer than {MAX_MESSAGE_CHARS} characters"):
        check_message("x" * (MAX_MESSAGE_CHARS + 1))
    with pytest.raises(ContractError, match="超过"):
        check_message("退" * (MAX_MESSAGE_CHARS + 1))


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state dir with the demo directory and its keys, but no issuer key: nothing can be signed."""
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    create_demo_directory(tmp_path)
    private_key_path(tmp_path, ISSUER_KID).unlink()
    return tmp_path


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["say"], "Missing argument 'CASE'"),
        (["say", "c1"], "Missing argument 'TEXT'"),
        (["say", "c1", "   "], "error: invalid_message: the message is empty"),
        (["say", "c1", "x" * 2001], "error: invalid_message: Your message is longer than 2000 characters"),
        (["say", "c1", "hi", "--wait", "-1"], "Invalid value for '--wait'"),
        (["say", "c1", "hi", "--as", "zed"], "error: unknown_person: 'zed' is not in the support directory."),
        (["say", "c1", "hi"], "error: signing_key_missing: "),
        (["chat", "--lang", "fr"], "Invalid value for '--lang'"),
        (["chat", "--as", "zed"], "error: unknown_person: 'zed' is not in the support directory."),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    monkeypatch.setattr(sys, "argv", ["starter.py", "--state-dir", str(state_dir), *args])
    code = _run_app()
    out = capsys.readouterr()
    assert code == ExitCode.REFUSED, (code, out)
    [line] = out.err.strip().splitlines()
    assert says in line and "Traceback" not in out.err and "unexpected" not in line
    assert out.out == ""
