"""One log format for every process of the service: the worker, the commerce server, the console.

``SUPPORT_LOG_FORMAT`` picks it: ``plain`` (the default; a person reads it in a terminal) or ``json``
(one JSON object per line, for a log shipper). ``SUPPORT_LOG_LEVEL`` picks the level (each process
has its own default); a bad value of either is a :class:`ConfigurationError`, said in one line by the
process that reads it. :func:`configure_logging` installs one handler on the root logger, so the
libraries' loggers (Temporal's, the MCP SDK's, uvicorn's when it is run with ``log_config=None``) go
through the same format. A JSON line holds :data:`HEADER` and the structured fields of
:class:`LogField` that the record carries (pass them with ``extra=log_fields(...)``); nothing else a
record carries is written, so a stray attribute never carries customer text or a secret into the log.

Two of Temporal's habits are changed here, because an operator reads them every day:

* An activity's failure is logged by the SDK with its stack trace. A failure that crossed
  :mod:`activities.runtime.boundary` is a classed error with a stable code, so :class:`OneLineFailures`
  writes it as one line with its code and case id instead (the boundary logs the stack of an
  unexpected error itself, where the stack still points at the bug).
* The SDK's Rust core writes its own plain lines to stderr; :func:`core_logging` forwards them to
  the ``temporalio.core`` logger instead.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import TextIO

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError
from temporalio.runtime import LogForwardingConfig, LoggingConfig, TelemetryFilter

from contracts.errors import ConfigurationError, SettingCode
from contracts.names import WORKFLOW_ID_PREFIX, case_id_of

LOG_FORMAT_ENV = "SUPPORT_LOG_FORMAT"
LOG_LEVEL_ENV = "SUPPORT_LOG_LEVEL"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
CORE_LOGGER = "temporalio.core"
"""The logger the SDK's Rust core is forwarded to (:func:`core_logging`)."""
ACTIVITY_LOGGER = "temporalio.activity"
ACTIVITY_FAILURE = "ActivityFailure"
"""The marker the SDK puts on its "Completing activity as failed" record (``__temporal_error_identifier``)."""


class LogFormat(StrEnum):
    PLAIN = "plain"
    JSON = "json"


class Service(StrEnum):
    """The process a line comes from: the worker's stderr also carries its stdio commerce servers'."""

    WORKER = "worker"
    COMMERCE = "commerce"
    CONSOLE = "console"
    CHANNEL = "channel"


class LogField(StrEnum):
    """The keys of a JSON log line. The first five are on every line; the others only when known."""

    TIME = "time"
    LEVEL = "level"
    LOGGER = "logger"
    SERVICE = "service"
    MESSAGE = "message"
    CASE_ID = "case_id"
    CODE = "code"
    ERROR_CLASS = "error_class"
    RETRIED = "retried"
    ACTIVITY = "activity"
    ATTEMPT = "attempt"
    TOOL = "tool"
    TENANT = "tenant"
    ORDER_ID = "order_id"
    AMOUNT_CENTS = "amount_cents"
    CURRENCY = "currency"
    APPROVAL_ID = "approval_id"
    RECEIPT_ID = "receipt_id"
    EXCEPTION = "exception"
    """The formatted stack of an unexpected error (never of an expected refusal)."""


HEADER = (LogField.TIME, LogField.LEVEL, LogField.LOGGER, LogField.SERVICE, LogField.MESSAGE)
EXTRA_FIELDS = tuple(field for field in LogField if field not in HEADER and field is not LogField.EXCEPTION)
"""The structured fields a record may carry (``extra=``), in the order a line shows them."""


def log_fields(
    *,
    case_id: str | None = None,
    code: str | None = None,
    error_class: str | None = None,
    tool: str | None = None,
    tenant: str | None = None,
    order_id: str | None = None,
    amount_cents: int | None = None,
    currency: str | None = None,
    approval_id: str | None = None,
    receipt_id: str | None = None,
) -> dict[str, object]:
    """The structured fields of one log call, for ``extra=``: ids, codes and amounts only, never text
    someone wrote. Fields left ``None`` are left out."""
    given: dict[str, object | None] = {
        LogField.CASE_ID: case_id,
        LogField.CODE: code,
        LogField.ERROR_CLASS: error_class,
        LogField.TOOL: tool,
        LogField.TENANT: tenant,
        LogField.ORDER_ID: order_id,
        LogField.AMOUNT_CENTS: amount_cents,
        LogField.CURRENCY: currency,
        LogField.APPROVAL_ID: approval_id,
        LogField.RECEIPT_ID: receipt_id,
    }
    return {str(name): value for name, value in given.items() if value is not None}


def log_format(environ: Mapping[str, str] = os.environ) -> LogFormat:
    """The format ``SUPPORT_LOG_FORMAT`` names (unset or empty: plain); another value is refused."""
    raw = (environ.get(LOG_FORMAT_ENV) or "").strip().lower() or LogFormat.PLAIN.value
    try:
        return LogFormat(raw)
    except ValueError:
        choices = ", ".join(form.value for form in LogFormat)
        raise ConfigurationError(
            SettingCode.INVALID_LOG_FORMAT, f"{LOG_FORMAT_ENV}={raw[:20]!r} is not a log format; use one of {choices}"
        ) from None


def log_level(environ: Mapping[str, str] = os.environ, default: str = "WARNING") -> int:
    """The level ``SUPPORT_LOG_LEVEL`` names (unset or empty: ``default``); another value is refused."""
    name = (environ.get(LOG_LEVEL_ENV) or default).strip().upper()
    if name not in LOG_LEVELS:
        raise ConfigurationError(
            SettingCode.INVALID_LOG_LEVEL,
            f"{LOG_LEVEL_ENV}={name[:20]!r} is not a level; use one of {', '.join(LOG_LEVELS)}",
        )
    level: int = getattr(logging, name)
    return level


def record_fields(record: logging.LogRecord) -> dict[str, object]:
    """The structured fields ``record`` carries, in :data:`EXTRA_FIELDS` order. An activity's or a
    workflow's record from Temporal's loggers names its case by its workflow id (``case-<id>``), its
    activity and attempt: those become ``case_id``, ``activity`` and ``attempt`` when not given."""
    found = {field.value: record.__dict__[field.value] for field in EXTRA_FIELDS if field.value in record.__dict__}
    temporal = record.__dict__.get("temporal_activity") or record.__dict__.get("temporal_workflow")
    if isinstance(temporal, Mapping):
        workflow_id = temporal.get("workflow_id")
        if isinstance(workflow_id, str) and workflow_id.startswith(WORKFLOW_ID_PREFIX):
            found.setdefault(LogField.CASE_ID.value, case_id_of(workflow_id))
        if isinstance(temporal.get("activity_type"), str):
            found.setdefault(LogField.ACTIVITY.value, temporal["activity_type"])
        if isinstance(temporal.get("attempt"), int):
            found.setdefault(LogField.ATTEMPT.value, temporal["attempt"])
    return {field.value: found[field.value] for field in EXTRA_FIELDS if found.get(field.value) is not None}


class LogFormatter(logging.Formatter):
    """A record as one plain line (time, level, service, logger, message, ``key=value`` fields) or
    as one JSON object; a stack, when a record carries one, follows the plain line or is the JSON
    line's ``exception``."""

    def __init__(self, service: Service, form: LogFormat = LogFormat.PLAIN) -> None:
        super().__init__()
        self.service = service
        self.form = form

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        fields = record_fields(record)
        stack = self.formatException(record.exc_info) if record.exc_info else (record.exc_text or "")
        if record.stack_info:
            stack = f"{stack}\n{self.formatStack(record.stack_info)}".strip()
        if self.form is LogFormat.JSON:
            line: dict[str, object] = {
                LogField.TIME.value: _utc_time(record.created),
                LogField.LEVEL.value: record.levelname,
                LogField.LOGGER.value: record.name,
                LogField.SERVICE.value: self.service.value,
                LogField.MESSAGE.value: message,
                **fields,
            }
            if stack:
                line[LogField.EXCEPTION.value] = stack
            return json.dumps(line, ensure_ascii=False, default=str)
        shown = "".join(f" {name}={value}" for name, value in fields.items())
        text = f"{self.formatTime(record)} {record.levelname} {self.service.value} {record.name}: {message}{shown}"
        return f"{text}\n{stack}" if stack else text


def _utc_time(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class OneLineFailures(logging.Filter):
    """On Temporal's activity logger: its "Completing activity as failed" record of a failure that
    crossed :mod:`activities.runtime.boundary` (an ``ApplicationError`` whose details carry a ``code``)
    becomes one line, "activity X refused: code: message" (not retried) or "activity X failed,
    Temporal retries it: ..." (retried), with the code, class and retry posture as fields and no
    stack. The stack would only show the boundary re-raising the classed error; an unexpected error's
    own stack is logged by the boundary. Every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.__dict__.get("__temporal_error_identifier") != ACTIVITY_FAILURE:
            return True
        if not isinstance(error, ApplicationError) or not error.details or not isinstance(error.details[0], dict):
            return True
        details = error.details[0]
        if "code" not in details:
            return True
        retried = not error.non_retryable
        activity_type = record_fields(record).get(LogField.ACTIVITY.value, "activity")
        said = " ".join(error.message.split())
        outcome = "failed, Temporal retries it" if retried else "refused"
        record.msg = f"activity {activity_type} {outcome}: {said}"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        record.__dict__[LogField.CODE.value] = str(details["code"])
        record.__dict__[LogField.ERROR_CLASS.value] = str(details.get("error_class") or error.type or "")
        record.__dict__[LogField.RETRIED.value] = retried
        return True


def core_logging(level: str = "WARN") -> LoggingConfig:
    """The Temporal runtime's logging: the Rust core's lines forwarded to :data:`CORE_LOGGER` (so they
    take this module's format) instead of written to stderr in the core's own."""
    return LoggingConfig(
        filter=TelemetryFilter(core_level=level, other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logging.getLogger(CORE_LOGGER), append_target_to_name=False),
    )


class _ServiceHandler(logging.StreamHandler[TextIO]):
    """The one handler :func:`configure_logging` installs (found again and replaced by a second call).
    Given no stream it writes to ``sys.stderr`` as it is when a line is written, not as it was at
    start: a process (or a test runner) that swaps ``sys.stderr`` later still gets the lines."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._follows_stderr = stream is None
        super().__init__(stream)

    @property
    def stream(self) -> TextIO:
        return sys.stderr if self._follows_stderr else self._stream

    @stream.setter
    def stream(self, value: TextIO) -> None:
        self._stream = value


SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
"""uvicorn's loggers: served with ``log_config=None`` they have no handler of their own; one that a
default uvicorn configuration gave them is removed, so their lines too go out in the one format."""


def configure_logging(
    service: Service,
    environ: Mapping[str, str] = os.environ,
    *,
    level: int | None = None,
    default_level: str = "WARNING",
    records: Iterable[str] = (),
    stream: TextIO | None = None,
) -> LogFormat:
    """Send every log record of this process to ``stream`` (default stderr) in the format
    ``SUPPORT_LOG_FORMAT`` names, at ``level`` (default: ``SUPPORT_LOG_LEVEL``, else
    ``default_level``); return the format. ``records`` name loggers whose INFO lines are records an
    operator keeps whatever the level (a paid refund): they are logged at INFO at least.

    Raises :class:`ConfigurationError` for a bad format or level, before anything is changed."""
    form = log_format(environ)
    chosen = log_level(environ, default_level) if level is None else level
    root = logging.getLogger()
    for existing in [handler for handler in root.handlers if isinstance(handler, _ServiceHandler)]:
        root.removeHandler(existing)
    handler = _ServiceHandler(stream)
    handler.setFormatter(LogFormatter(service, form))
    root.addHandler(handler)
    root.setLevel(chosen)
    for name in records:
        logging.getLogger(name).setLevel(min(chosen, logging.INFO))
    for name in SERVER_LOGGERS:  # a uvicorn configured earlier in the process keeps its own handlers
        server_log = logging.getLogger(name)
        server_log.handlers.clear()
        server_log.propagate = True
    activity_log = logging.getLogger(ACTIVITY_LOGGER)
    if not any(isinstance(existing, OneLineFailures) for existing in activity_log.filters):
        activity_log.addFilter(OneLineFailures())
    logging.captureWarnings(True)  # a library's warning is a log line too, in the same format
    # Temporal's loggers append the activity's or workflow's details to each message as a Python dict;
    # the case, activity and attempt are fields instead (record_fields), so the message stays a sentence.
    activity.logger.activity_info_on_message = False
    workflow.logger.workflow_info_on_message = False
    return form


__all__ = [
    "LOG_FORMAT_ENV",
    "LOG_LEVELS",
    "LOG_LEVEL_ENV",
    "LogField",
    "LogFormat",
    "LogFormatter",
    "OneLineFailures",
    "Service",
    "configure_logging",
    "core_logging",
    "log_fields",
    "log_format",
    "log_level",
    "record_fields",
]
