"""``starter.py audit``: the whole case read from its workflow history alone (no worker, database or
keys), on every committed history, and from the command line on an exported file.

Expected values are read from each history file independently of the code under test: the JSON is
decoded here by hand (base64 payloads, zlib for compressed ones), never through :mod:`case_history.trail`.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from temporalio.api.common.v1 import Payload

from case_history.audit import CaseAudit, audit_from_history
from case_history.audit_reviews import CLAIMED, NAMED
from case_history.trail import history_from_json
from cli.audit_json import audit_json
from cli.audit_render import audit_lines
from cli.exit_codes import ExitCode
from cli.text_layout import WIDTH
from tests.release_code import all_histories

ROOT = Path(__file__).resolve().parents[2]
HISTORIES = all_histories()
RELEASE_0_1 = {
    "answered_delivery": ("completed", "answered"),
    "approved_refund": ("completed", "refund_settled"),
    "expired_refund": ("expired", "proposal_expired_without_decision"),
    "needs_human_uncovered": ("needs_human", None),
    "needs_input_foreign_order": ("needs_input", "more_input_needed"),
    "rejected_refund": ("rejected", "rejected by chen"),
}
History = dict[str, Any]


# --- reading a history file by hand -------------------------------------------------------------------


def _load(name: str) -> History:
    return json.loads((ROOT / "tests" / "histories" / "v0.1" / f"{name}.json").read_text(encoding="utf-8"))


def _payload(payload: dict[str, Any]) -> Any:
    """A payload's JSON value; one the case codec compressed (``binary/zlib``: zlib of the serialized
    original payload) is inflated here by hand first."""
    if base64.b64decode(payload.get("metadata", {}).get("encoding", "")) == b"binary/zlib":
        original = Payload.FromString(zlib.decompress(base64.b64decode(payload["data"])))
        return json.loads(original.data)
    return json.loads(base64.b64decode(payload["data"]))


def _encoded(value: Any) -> dict[str, Any]:
    return {
        "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
        "data": base64.b64encode(json.dumps(value).encode()).decode(),
    }


def _case_input(history: History) -> dict[str, Any]:
    return _payload(history["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0])


def _final_view(history: History) -> dict[str, Any] | None:
    for event in history["events"]:
        if "workflowExecutionCompletedEventAttributes" in event:
            return _payload(event["workflowExecutionCompletedEventAttributes"]["result"]["payloads"][0])
    return None


def _scheduled(history: History, activity: str) -> list[dict[str, Any]]:
    return [
        event
        for event in history["events"]
        if event.get("activityTaskScheduledEventAttributes", {}).get("activityType", {}).get("name") == activity
    ]


def _local_tool_names(history: History) -> list[str]:
    """The tools run as local activities (``short-steps-local``), in the order the workflow scheduled
    them (the ``seq`` of each marker's data), named by the observation each marker holds."""
    runs = []
    for event in history["events"]:
        marker = event.get("markerRecordedEventAttributes", {})
        if marker.get("markerName") != "core_local_activity":
            continue
        data = _payload(marker["details"]["data"]["payloads"][0])
        if data["activity_type"] == "run_investigation_tool":
            runs.append((data["seq"], _payload(marker["details"]["result"]["payloads"][0])["name"]))
    return [name for _, name in sorted(runs)]


def _result_of(history: History, scheduled: dict[str, Any]) -> Any:
    for event in history["events"]:
        completed = event.get("activityTaskCompletedEventAttributes")
        if completed and int(completed["scheduledEventId"]) == int(scheduled["eventId"]):
            return _payload(completed["result"]["payloads"][0])
    raise AssertionError(f"activity {scheduled['eventId']} has no result")


def _review_signals(history: History) -> list[Any]:
    return [
        _payload(event["workflowExecutionSignaledEventAttributes"]["input"]["payloads"][0])
        for event in history["events"]
        if event.get("workflowExecutionSignaledEventAttributes", {}).get("signalName") == "review"
    ]


def _audit(history: History) -> CaseAudit:
    return audit_from_history(history_from_json(json.dumps(history), "case-under-audit"))


def _text(history: History) -> str:
    return "\n".join(audit_lines(_audit(history), "a test history"))


def _section(lines: list[str], heading: str) -> list[str]:
    """The lines of the section whose heading starts so, up to the blank line that ends it."""
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return lines[start:end]


def _too_wide(lines: list[str]) -> list[str]:
    """Lines wider than the terminal that are not one unbreakable token (an id, a digest, a path)."""
    return [line for line in lines if cell_len(line) > WIDTH and len(line.split()) > 1]


# --- every committed history --------------------------------------------------------------------------


@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
def test_every_history_is_audited_in_80_columns_and_as_json(path: Path) -> None:
    history = json.loads(path.read_text(encoding="utf-8"))
    case = _case_input(history)
    audit = _audit(history)
    lines = audit_lines(audit, str(path))
    assert not _too_wide(lines), _too_wide(lines)
    # two screens of 58 rows for a one-question case (release 0.2's refused-review answers say why in
    # full, two lines more), one screen more for each further planned turn of a conversation; its
    # transcript at most four lines an entry (three of words, one naming the update that carried it)
    talk = _section(lines, "conversation (UTC")
    turns = sum(1 for line in lines if line[12:].startswith("plan_case"))
    assert len(talk) <= 4 + 4 * len(audit.conversation.entries) + 3 * len(audit.conversation.messages), talk
    rest = len(lines) - len(talk)
    assert rest <= 116 + 58 * max(turns - 1, 0), f"{rest} lines is more than two screens a turn"
    text = "\n".join(lines)
    assert lines[0].startswith(f"case {case['case_id']}: audit of")
    assert f"{case['applicant']['subject']} (tenant {case['applicant']['tenant']}" in text
    assert case["question"].split()[0] in text
    assert "eyJ" not in text  # no token is ever printed, only what it claims and its id

    data = json.loads(json.dumps(audit_json(audit, str(path))))
    assert data["case_id"] == case["case_id"] and data["verified"] is False
    assert data["asked"]["question"] == case["question"]
    assert "eyJ" not in json.dumps(data)
    final = _final_view(history)
    if final is None:  # a run that continued as new: the case goes on in its next run
        assert data["final"]["still_running"] is True and data["final"]["run_end"] == "continued as new"
        assert "\noutcome: still running: this run continued as new" in text
    else:
        assert (data["final"]["status"], data["final"]["reason"]) == (final["status"], final["reason"])
        assert data["final"]["still_running"] is False
        outcome = text[text.index("outcome: ") :]
        assert f"final status {final['status']}" in outcome and " ".join(outcome.split()).count(final["status"])
        assert data["answer"]["text"] == final["answer"] and data["digest"] == final["digest"]
        assert data["evidence"]["answer_citations"] == final["citations"]
    tools = _scheduled(history, "run_investigation_tool")
    scheduled_tools = [
        _payload(event["activityTaskScheduledEventAttributes"]["input"]["payloads"][0])["name"] for event in tools
    ]
    local_tools = _local_tool_names(history)
    assert not (scheduled_tools and local_tools)  # one shape per run: before or after short-steps-local
    assert [call["tool"]["name"] for call in data["tool_calls"]] == scheduled_tools + local_tools
    review_updates = [
        event
        for event in history["events"]
        if event.get("workflowExecutionUpdateAcceptedEventAttributes", {})
        .get("acceptedRequest", {})
        .get("input", {})
        .get("name")
        == "review"
    ]
    assert len(data["reviews"]) == len(_review_signals(history)) + len(review_updates)


@pytest.mark.parametrize("name", sorted(RELEASE_0_1))
def test_release_0_1_histories_end_as_recorded(name: str) -> None:
    history = _load(name)
    final = _final_view(history)
    assert final is not None
    status, reason = RELEASE_0_1[name]
    assert final["status"] == status and (reason is None or final["reason"] == reason)
    outcome = " ".join(_text(history).split("outcome: ", 1)[1].split())
    assert outcome.startswith(f"final status {final['status']}: {final['reason']}")


def test_approved_refund_names_amount_digest_reviewer_and_receipt() -> None:
    history = _load("approved_refund")
    final = _final_view(history)
    assert final is not None
    [settle] = _scheduled(history, "execute_refund")
    receipt = _result_of(history, settle)
    [review] = _review_signals(history)
    text = _text(history)
    lines = text.splitlines()

    assert final["proposal"]["amount_cents"] == 12900 and receipt["amount_cents"] == 12900
    assert "12900 cents CNY for order QH-1001 of alice (qinghe)" in text
    assert f"    {final['digest']}" in lines  # the whole digest, on a line of its own
    assert "digest (sha-256 of the proposal; recomputed here: the same)" in text
    assert f"{review['reviewer']}: approve" in text and f"({NAMED})" in text and CLAIMED not in text
    assert "case log: review_accepted: chen via signal: approve" in text
    assert f"receipt {receipt['receipt_id']}: 12900 cents CNY for QH-1001" in text
    assert "receipt signature: unsigned" in text
    assert "applicant token: none in the case input" in text
    assert "written by: not recorded (an older case)" in text  # release 0.1 kept no answer source
    # the timeline: every model request by kind, every tool with its arguments and result
    timeline = text[text.index("timeline") : text.index("evidence cited")]
    for kind in ("plan_case", "investigate_turn", "compose_answer", "review_answer", "execute_refund"):
        assert f"  {kind} " in timeline
    assert timeline.count("investigate_turn") == 3 and "rehearsal, tokens unknown" in timeline
    assert "tool calculate_refund  ok: order_id=QH-1001" in timeline and "amount_cents=12900" in timeline
    assert 'query="refund window delivery warehouse receipt"' in " ".join(timeline.split())
    assert "model requests: 6, 0 not completed, no token usage reported" in timeline
    evidence = text[text.index("evidence cited") : text.index("proposal")]
    assert ", ".join(final["citations"]) in evidence
    assert ", ".join(final["quote"]["citations"]) in evidence


@pytest.mark.parametrize("name", ["rejected_refund", "expired_refund"])
def test_a_refund_that_was_not_paid_shows_its_proposal_digest_and_why(name: str) -> None:
    history = _load(name)
    final = _final_view(history)
    assert final is not None and final["proposal"] is not None
    text = _text(history)
    proposal = final["proposal"]
    assert f"{proposal['amount_cents']} cents CNY for order {proposal['order_id']}" in text
    assert f"    {final['digest']}" in text.splitlines()
    assert "settlement: nothing was executed" in text
    outcome = " ".join(text.split("outcome: ", 1)[1].split())
    assert outcome.startswith(f"final status {final['status']}: {final['reason']}")
    assert final["status"] == name.split("_")[0]  # rejected / expired
    if name == "rejected_refund":
        assert "chen: reject" in text and "case log: review_accepted: chen via signal: reject" in text
    else:
        assert "review attempts: none" in text


def test_signed_reviews_are_claims_with_the_channel_answer_and_case_log_of_each() -> None:
    history = _load("forged_then_approved-2026-12-issue9")
    audit = _audit(history)
    assert [(r.channel, r.who, r.label) for r in audit.reviews] == [
        ("signal", "chen", CLAIMED),
        ("update", "mei", CLAIMED),
        ("update", "chen", CLAIMED),
    ]
    assert [r.answer for r in audit.reviews] == [
        None,
        "failed (review_refused: reviewer_of_another_tenant)",
        "accepted: approve",
    ]
    recorded = [(r.recorded.kind, r.recorded.detail) if r.recorded else None for r in audit.reviews]
    assert recorded == [
        ("review_refused", "chen (claimed) via signal: bad_signature"),
        ("review_refused", "mei via update: reviewer_of_another_tenant"),
        ("review_accepted", "chen via update: approve (signed)"),
    ]
    text = "\n".join(audit_lines(audit))
    assert text.count(f"({CLAIMED})") == 5  # the applicant token, three reviews, the settled approval
    assert "receipt signature: signed as the commerce server (claimed, unverified)" in text
    assert "written by: the service, from the commerce receipt" in text


def test_malformed_and_refused_reviews_and_a_failed_activity_are_shown() -> None:
    text = _text(_load("refused_then_approved-2026-12-issue9"))
    assert "malformed review payload (approval_token: Field required)" in text
    assert (
        f"bob: approve\n            ({NAMED})\n            answered: failed (review_refused: signature_required)"
        in text
    )
    unverified = _text(_load("applicant_unverified-2026-12-issue9"))
    assert "verify_applicant       failed" in unverified
    assert "failure: authorization: applicant_token_missing: The case carries no" in unverified
    assert "final status failed: applicant_unverified:applicant_token_missing" in " ".join(unverified.split())


def test_a_flood_of_identical_reviews_is_counted_not_listed() -> None:
    history = _load("review_flood-run1-2026-12-issue9")
    signals = _review_signals(history)
    text = _text(history)
    assert f"review attempts: {len(signals)}" in text
    assert f"... and {len(signals) - 1} more like it" in text
    assert "still running: this run continued as new (last recorded: waiting_approval" in " ".join(text.split())


def test_activity_summaries_are_shown_on_their_timeline_line() -> None:
    history = _load("approved_refund")
    [plan] = _scheduled(history, "plan_case")
    plan["userMetadata"] = {"summary": _encoded("plan the case: intent and order")}
    [settle] = _scheduled(history, "execute_refund")
    settle["userMetadata"] = {"summary": _encoded(r"pay the approved refund")}
    [record, _] = _scheduled(history, "write_case_record")
    record["userMetadata"] = {"summary": _encoded(r"record \[x\]\(y\) execute\_refund")}  # markdown, escaped
    audit = _audit(history)
    assert [call.summary for call in audit.activities if call.summary] == [
        "plan the case: intent and order",
        r"record \[x\]\(y\) execute\_refund",
        "pay the approved refund",
    ]
    lines = audit_lines(audit)
    row = next(index for index, line in enumerate(lines) if "  plan_case " in line)
    assert lines[row : row + 2] == [  # too long for the line: the next line
        "  15:13:18  plan_case              completed: rehearsal, tokens unknown",
        '            "plan the case: intent and order"',
    ]
    settle_line = next(line for line in lines if "  execute_refund " in line)
    assert settle_line == '  15:13:20  execute_refund         completed  "pay the approved refund"'
    assert '  15:13:19  write_case_record      completed  "record [x](y) execute_refund"' in lines
    assert not _too_wide(lines)


def test_hostile_text_is_printed_literally_and_chinese_is_wrapped() -> None:
    history = _load("answered_delivery")
    start = history["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
    case = _payload(start)
    case["question"] = "[bold]x[/bold] \x1b[31mred\x1b[0m " + "我的订单什么时候到货请告诉我物流单号" * 6
    start["data"] = base64.b64encode(json.dumps(case).encode()).decode()
    completed = history["events"][-1]["workflowExecutionCompletedEventAttributes"]["result"]["payloads"][0]
    view = _payload(completed)
    link = "https://qinghe.example/" + "a" * 100
    view["answer"] = f"See {link} now.\n" + "The parcel is on its way. " * 80
    completed["data"] = base64.b64encode(json.dumps(view).encode()).decode()
    audit = _audit(history)
    lines = audit_lines(audit)
    text = "\n".join(lines)
    assert "\x1b" not in text and "[bold]x[/bold] ?[31mred?[0m" in text
    assert f"    {link}" in lines  # a word wider than the terminal: on its own line, never cut
    assert "more characters (--json has the whole answer)" in text
    assert audit_json(audit)["answer"]["text"] == view["answer"]
    assert [line for line in lines if cell_len(line) > WIDTH] == [f"    {link}"]  # Chinese is broken between characters
    assert "".join(text.split()).count("我的订单什么时候到货请告诉我物流单号" * 6) == 1


# --- the command line ---------------------------------------------------------------------------------


def _starter(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(tmp_path / "state"), *args]
    env = {key: value for key, value in os.environ.items() if key != "SUPPORT_DEBUG"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def test_audit_command_prints_json_and_refuses_a_bad_file_in_one_line(tmp_path: Path) -> None:
    path = ROOT / "tests" / "histories" / "v0.1" / "approved_refund.json"
    history = json.loads(path.read_text(encoding="utf-8"))
    case_id = _case_input(history)["case_id"]
    final = _final_view(history)
    assert final is not None

    done = _starter(tmp_path, "--profile", "lin", "audit", case_id, "--history", str(path), "--json")
    assert done.returncode == ExitCode.DECIDED, done.stderr
    data = json.loads(done.stdout)
    assert data["case_id"] == case_id and data["source"] == f"the history file {path}"
    assert data["proposal"]["amount_cents"] == 12900 and data["digest"] == final["digest"]
    assert data["digest_recomputed"] == final["digest"]
    assert data["settlement"]["receipt"]["receipt_id"] == final["receipt"]["receipt_id"]
    assert [(r["channel"], r["who"], r["label"]) for r in data["reviews"]] == [("signal", "chen", NAMED)]
    assert [call["kind"] for call in data["model_requests"]] == [
        "plan_case", "investigate_turn", "investigate_turn", "investigate_turn", "compose_answer", "review_answer"
    ]  # fmt: skip
    assert {call["tool"]["name"] for call in data["tool_calls"]} == {
        "get_order", "search_knowledge", "calculate_refund", "load_skill"
    }  # fmt: skip
    assert data["final"] == {
        "status": "completed",
        "reason": "refund_settled",
        "run_end": "completed",
        "read_from": "the workflow's result",
        "still_running": False,
    }

    text = _starter(tmp_path, "audit", f"case-{case_id}", "--history", str(path))
    assert text.returncode == ExitCode.DECIDED and text.stderr == ""
    assert final["digest"] in text.stdout.splitlines()[-1] or f"    {final['digest']}" in text.stdout.splitlines()

    not_json = tmp_path / "not-a-history.json"
    not_json.write_text("{not json", encoding="utf-8")
    empty = tmp_path / "empty.json"
    empty.write_text('{"events": []}', encoding="utf-8")
    another = tmp_path / "another.json"
    another.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    for args, says in [
        ((case_id, "--history", str(not_json)), "error: history_unreadable: not a workflow history in JSON"),
        ((case_id, "--history", str(tmp_path / "missing.json")), "error: history_unreadable: cannot read"),
        ((case_id, "--history", str(empty)), "holds no workflow start event: not a case's history"),
        (("rec-00000000", "--history", str(another)), f"is of case {case_id}, not rec-00000000"),
    ]:
        refused = _starter(tmp_path, "audit", *args)
        assert refused.returncode == ExitCode.REFUSED, (args, refused.stdout, refused.stderr)
        assert refused.stdout == "" and "Traceback" not in refused.stderr
        [line] = refused.stderr.strip().splitlines()
        assert says in line, line


def test_model_identity_usage_and_workflow_refusals_from_the_case_log() -> None:
    history = _load("approved_refund")
    [plan] = _scheduled(history, "plan_case")
    for event in history["events"]:
        completed = event.get("activityTaskCompletedEventAttributes")
        if completed and int(completed["scheduledEventId"]) == int(plan["eventId"]):
            result = _payload(completed["result"]["payloads"][0])
            usage = {"prompt_tokens": 900, "completion_tokens": 334, "total_tokens": 1234}
            result["meta"] = {"provider": "deepseek", "model": "deepseek-chat", "attempt": 2, "usage": usage}
            completed["result"]["payloads"][0] = _encoded(result)
    last_record = _scheduled(history, "write_case_record")[-1]["activityTaskScheduledEventAttributes"]
    record = _payload(last_record["input"]["payloads"][0])
    refusal = {"at": record["events"][3]["at"], "kind": "tool_refused", "detail": "delete_order: tool_not_allowed"}
    record["events"].insert(4, refusal)
    last_record["input"]["payloads"][0] = _encoded(record)

    audit = _audit(history)
    [first] = [call for call in audit.model_requests if call.kind == "plan_case"]
    assert first.model is not None and first.model.usage is not None and first.model.usage.total_tokens == 1234
    text = _text(history)
    flat = " ".join(text.split())
    assert "plan_case completed: deepseek:deepseek-chat, 1234 tokens, model attempt 2" in flat
    assert "model requests: 6, 0 not completed, 1234 tokens reported by 1" in text
    assert "  15:13:19  tool_refused           (case log) delete_order: tool_not_allowed" in text
    assert "tool calls: 4 run, 1 refused by the workflow" in text
    assert [event["detail"] for event in audit_json(audit)["refusals"]] == ["delete_order: tool_not_allowed"]


def test_a_case_still_waiting_for_its_reviewer_is_still_running() -> None:
    history = _load("approved_refund")
    signal = next(i for i, event in enumerate(history["events"]) if "workflowExecutionSignaledEventAttributes" in event)
    history["events"] = history["events"][:signal]  # as fetched while the proposal waits for a reviewer
    final = _final_view(_load("approved_refund"))
    assert final is not None
    audit = _audit(history)
    data = audit_json(audit)
    assert data["final"]["still_running"] is True and data["final"]["status"] == "waiting_approval"
    assert data["settlement"] is None and data["reviews"] == []
    text = _text(history)
    assert "outcome: still running (last recorded: waiting_approval, from the last case record)" in " ".join(
        text.split()
    )
    assert f"    {final['digest']}" in text.splitlines() and "review attempts: none" in text
    assert "12900 cents CNY for order QH-1001" in text
