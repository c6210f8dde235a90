"""The one log format (contracts/logs.py): plain and JSON lines, their structured fields, the settings
that choose them, and Temporal's activity failures written as one line."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.activity import logger as activity_logger
from temporalio.exceptions import ApplicationError
from temporalio.workflow import logger as workflow_logger

from contracts.errors import AuthorizationError, ConfigurationError, TransientError, WireCode, to_application_error
from contracts.logs import (
    LOG_FORMAT_ENV,
    LOG_LEVEL_ENV,
    LogFormat,
    LogFormatter,
    OneLineFailures,
    Service,
    configure_logging,
    log_fields,
    log_format,
    log_level,
)

CASE = "c0ffee000001"
ACTIVITY_DETAILS = {
    "activity_id": "1",
    "activity_type": "verify_applicant",
    "attempt": 1,
    "namespace": "default",
    "task_queue": "support-cases",
    "workflow_id": f"case-{CASE}",
    "workflow_run_id": "run",
    "workflow_type": "SupportCaseWorkflow",
}


def record(
    message: str = "refund paid",
    *,
    name: str = "commerce_server.refunds.paid",
    level: int = logging.INFO,
    extra: dict[str, Any] | None = None,
    error: BaseException | None = None,
) -> logging.LogRecord:
    """A record as ``logger.log(level, message, extra=extra, exc_info=error)`` makes it."""
    exc_info = (type(error), error, error.__traceback__) if error is not None else None
    return logging.getLogger(name).makeRecord(name, level, __file__, 1, message, (), exc_info, extra=extra)


def raised(error: BaseException) -> BaseException:
    """``error`` with a traceback, as a logger receives it from an ``except`` block."""
    try:
        raise error
    except BaseException as caught:
        return caught


def test_a_plain_line_names_time_level_service_logger_message_and_fields() -> None:
    fields = log_fields(case_id=CASE, order_id="QH-1001", amount_cents=12900, receipt_id="SIM-1")
    line = LogFormatter(Service.COMMERCE).format(record(extra=fields))
    assert "\n" not in line
    stamp, rest = line.split(" INFO ", 1)
    assert len(stamp.split()) == 2  # date and time, as before: "2026-12-07 01:02:03,456"
    assert rest == f"commerce commerce_server.refunds.paid: refund paid case_id={CASE} order_id=QH-1001 " + (
        "amount_cents=12900 receipt_id=SIM-1"
    )


def test_a_json_line_holds_the_header_and_only_the_known_fields() -> None:
    fields = log_fields(case_id=CASE, order_id="QH-1001", amount_cents=12900, currency="CNY", receipt_id="SIM-1")
    extra = {**fields, "question": "Please refund my desk", "token": "eyJsecret"}  # not fields: never written
    line = LogFormatter(Service.COMMERCE, LogFormat.JSON).format(record(extra=extra))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed.pop("time").endswith("Z")
    assert parsed == {
        "level": "INFO",
        "logger": "commerce_server.refunds.paid",
        "service": "commerce",
        "message": "refund paid",
        "case_id": CASE,
        "order_id": "QH-1001",
        "amount_cents": 12900,
        "currency": "CNY",
        "receipt_id": "SIM-1",
    }
    assert "Please refund" not in line and "eyJsecret" not in line


def test_log_fields_leaves_out_what_is_unknown() -> None:
    assert log_fields(case_id=CASE, code=None, amount_cents=0) == {"case_id": CASE, "amount_cents": 0}


def test_a_temporal_record_names_its_case_activity_and_attempt() -> None:
    line = LogFormatter(Service.WORKER, LogFormat.JSON).format(
        record("case record written", name="temporalio.activity", extra={"temporal_activity": ACTIVITY_DETAILS})
    )
    parsed = json.loads(line)
    assert (parsed["case_id"], parsed["activity"], parsed["attempt"]) == (CASE, "verify_applicant", 1)
    assert "workflow_run_id" not in parsed  # the rest of the SDK's details is not a field


def test_an_unexpected_errors_stack_is_kept_in_both_formats() -> None:
    error = raised(RuntimeError("disk on fire"))
    plain = LogFormatter(Service.WORKER).format(record("crashed", level=logging.ERROR, error=error))
    assert plain.splitlines()[0].endswith("crashed") and "Traceback" in plain and "disk on fire" in plain
    line = LogFormatter(Service.WORKER, LogFormat.JSON).format(record("crashed", level=logging.ERROR, error=error))
    assert "\n" not in line
    assert "Traceback" in json.loads(line)["exception"]


@pytest.mark.parametrize(("raw", "expected"), [(None, "plain"), ("", "plain"), ("json", "json"), (" JSON ", "json")])
def test_the_format_is_plain_unless_json_is_asked_for(raw: str | None, expected: str) -> None:
    environ = {} if raw is None else {LOG_FORMAT_ENV: raw}
    assert log_format(environ) is LogFormat(expected)


def test_a_bad_format_or_level_is_one_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as bad_format:
        log_format({LOG_FORMAT_ENV: "yaml"})
    assert bad_format.value.code == "invalid_log_format"
    assert bad_format.value.message == "SUPPORT_LOG_FORMAT='yaml' is not a log format; use one of plain, json"
    with pytest.raises(ConfigurationError) as bad_level:
        log_level({LOG_LEVEL_ENV: "chatty"})
    assert bad_level.value.code == "invalid_log_level"
    assert log_level({}, default="INFO") == logging.INFO
    assert log_level({LOG_LEVEL_ENV: "debug"}) == logging.DEBUG


def sdk_failure_record(error: BaseException) -> logging.LogRecord:
    """The record Temporal's worker logs when an activity fails ("Completing activity as failed")."""
    extra = {"__temporal_error_identifier": "ActivityFailure", "temporal_activity": ACTIVITY_DETAILS}
    message = "Completing activity as failed"
    return record(message, name="temporalio.activity", level=logging.WARNING, extra=extra, error=raised(error))


def test_an_expected_refusal_from_an_activity_is_one_line_with_its_code_and_case() -> None:
    refusal = to_application_error(AuthorizationError(WireCode("applicant_unverified"), "the token names another case"))
    failure = sdk_failure_record(refusal)
    assert OneLineFailures().filter(failure)
    line = LogFormatter(Service.WORKER, LogFormat.JSON).format(failure)
    parsed = json.loads(line)
    assert parsed["message"] == (
        "activity verify_applicant refused: applicant_unverified: the token names another case"
    )
    assert (parsed["code"], parsed["error_class"], parsed["retried"], parsed["case_id"]) == (
        "applicant_unverified",
        "authorization",
        False,
        CASE,
    )
    assert "exception" not in parsed and "Traceback" not in line
    plain = LogFormatter(Service.WORKER).format(failure)
    assert "\n" not in plain and f"case_id={CASE}" in plain and "code=applicant_unverified" in plain


def test_a_retried_failure_says_so_in_one_line() -> None:
    failure = sdk_failure_record(to_application_error(TransientError(WireCode("commerce_unavailable"), "try again")))
    assert OneLineFailures().filter(failure)
    line = LogFormatter(Service.WORKER).format(failure)
    assert "\n" not in line
    assert "activity verify_applicant failed, Temporal retries it: commerce_unavailable: try again" in line
    assert "retried=True" in line


def test_a_failure_that_did_not_cross_the_boundary_keeps_its_stack() -> None:
    failure = sdk_failure_record(ApplicationError("raised by hand, no details"))
    assert OneLineFailures().filter(failure)
    assert "Traceback" in LogFormatter(Service.WORKER).format(failure)
    other = record("Completing activity as failed", name="temporalio.activity", error=raised(RuntimeError("x")))
    assert OneLineFailures().filter(other) and other.exc_info is not None


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """The root logger's handlers and level, and the loggers these tests change, restored afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    paid = logging.getLogger("tests.logs.paid")
    activity = logging.getLogger("temporalio.activity")
    filters = list(activity.filters)
    yield root
    root.handlers[:] = handlers
    root.setLevel(level)
    paid.setLevel(logging.NOTSET)
    activity.filters[:] = filters
    logging.captureWarnings(False)
    activity_logger.activity_info_on_message = True  # the SDK's defaults
    workflow_logger.workflow_info_on_message = True


def test_configure_logging_installs_one_handler_in_the_chosen_format(root_logging: logging.Logger) -> None:
    stream = io.StringIO()
    configure_logging(Service.CONSOLE, {LOG_FORMAT_ENV: "plain"}, stream=io.StringIO())
    form = configure_logging(
        Service.CONSOLE, {LOG_FORMAT_ENV: "json"}, level=logging.WARNING, records=["tests.logs.paid"], stream=stream
    )
    assert form is LogFormat.JSON
    logging.getLogger("tests.logs.chatter").info("dropped: below the level")
    logging.getLogger("tests.logs.paid").info("kept: a record", extra=log_fields(case_id=CASE))
    logging.getLogger("uvicorn.error").warning("a library's line")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["logger"], line["message"], line["service"]) for line in lines] == [
        ("tests.logs.paid", "kept: a record", "console"),
        ("uvicorn.error", "a library's line", "console"),
    ]
    assert lines[0]["case_id"] == CASE
    ours = [h for h in root_logging.handlers if isinstance(h.formatter, LogFormatter)]
    assert len(ours) == 1  # the second call replaced the first handler
    assert sum(isinstance(f, OneLineFailures) for f in logging.getLogger("temporalio.activity").filters) == 1
    assert not activity_logger.activity_info_on_message  # the case and activity are fields, not a dict


def test_a_bad_setting_changes_nothing(root_logging: logging.Logger) -> None:
    before = list(root_logging.handlers)
    with pytest.raises(ConfigurationError):
        configure_logging(Service.WORKER, {LOG_FORMAT_ENV: "xml"})
    with pytest.raises(ConfigurationError):
        configure_logging(Service.WORKER, {LOG_LEVEL_ENV: "loud"})
    assert root_logging.handlers == before


def test_without_a_stream_the_handler_writes_to_the_stderr_of_the_moment(
    root_logging: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_logging(Service.WORKER, {}, level=logging.INFO)
    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)  # as a test runner swaps it after the process configured logging
    logging.getLogger("tests.logs.late").info("written where stderr is now")
    assert "written where stderr is now" in later.getvalue()
