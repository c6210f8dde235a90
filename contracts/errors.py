"""Error classes (SPEC §8), named once and used everywhere.

Every failure the service raises on purpose is a :class:`SupportError` with one of five classes. The
class alone decides whether Temporal retries: only ``transient`` errors are retried. The mapping to
Temporal's ``ApplicationError`` lives in :func:`to_application_error` and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError


class ErrorClass(StrEnum):
    TRANSIENT = "transient"
    CONTRACT = "contract"
    AUTHORIZATION = "authorization"
    BUSINESS = "business"
    CONFIGURATION = "configuration"


class SupportError(Exception):
    """A typed, classed failure with a stable machine-readable ``code``."""

    error_class: ErrorClass = ErrorClass.BUSINESS

    def __init__(self, code: str, message: str, *, retry_after_seconds: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_seconds = retry_after_seconds
        self.model: str | None = None
        """The model that was called, when the failure came after a provider request reached it."""
        self.provider: str | None = None
        """The provider of that model (``deepseek``, ``openai-compatible``), when ``model`` is set."""
        self.usage: dict[str, int] | None = None
        """The token counts the provider reported for a reply that was then refused."""

    @property
    def retryable(self) -> bool:
        return self.error_class is ErrorClass.TRANSIENT

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class TransientError(SupportError):
    error_class = ErrorClass.TRANSIENT


class ContractError(SupportError):
    error_class = ErrorClass.CONTRACT


class AuthorizationError(SupportError):
    error_class = ErrorClass.AUTHORIZATION


class BusinessError(SupportError):
    error_class = ErrorClass.BUSINESS


class ConfigurationError(SupportError):
    error_class = ErrorClass.CONFIGURATION


ERROR_TYPES: dict[ErrorClass, type[SupportError]] = {
    ErrorClass.TRANSIENT: TransientError,
    ErrorClass.CONTRACT: ContractError,
    ErrorClass.AUTHORIZATION: AuthorizationError,
    ErrorClass.BUSINESS: BusinessError,
    ErrorClass.CONFIGURATION: ConfigurationError,
}

# Stable commerce error codes and their class. The commerce server sends the code; clients rebuild
# the typed error from it with :func:`error_from_code`.
COMMERCE_ERROR_CLASSES: dict[str, ErrorClass] = {
    "order_not_accessible": ErrorClass.AUTHORIZATION,
    "shipment_not_accessible": ErrorClass.AUTHORIZATION,
    "invoice_not_accessible": ErrorClass.AUTHORIZATION,
    "ticket_not_accessible": ErrorClass.AUTHORIZATION,
    "product_not_found": ErrorClass.BUSINESS,
    "approval_invalid": ErrorClass.AUTHORIZATION,
    "approval_expired": ErrorClass.BUSINESS,
    "approval_signature_required": ErrorClass.AUTHORIZATION,
    "approval_signature_invalid": ErrorClass.AUTHORIZATION,
    "approval_reused": ErrorClass.AUTHORIZATION,
    "applicant_unverified": ErrorClass.AUTHORIZATION,
    "commerce_keys_unavailable": ErrorClass.CONFIGURATION,
    "quote_changed": ErrorClass.BUSINESS,
    "refund_not_eligible": ErrorClass.BUSINESS,
    "idempotency_conflict": ErrorClass.BUSINESS,
    "case_closed_unpaid": ErrorClass.BUSINESS,
    "case_already_paid": ErrorClass.BUSINESS,
    "ledger_mismatch": ErrorClass.BUSINESS,
    "invalid_argument": ErrorClass.CONTRACT,
    "tool_call_rejected": ErrorClass.CONTRACT,
    "scope_missing": ErrorClass.AUTHORIZATION,
    "token_rejected": ErrorClass.AUTHORIZATION,
    "database_unavailable": ErrorClass.TRANSIENT,
    "commerce_unavailable": ErrorClass.TRANSIENT,
    "commerce_timeout": ErrorClass.TRANSIENT,
    "internal_error": ErrorClass.TRANSIENT,
}


def error_from_code(code: str, message: str) -> SupportError:
    """Rebuild a typed error from a stable code (unknown codes are treated as contract errors)."""
    error_class = COMMERCE_ERROR_CLASSES.get(code, ErrorClass.CONTRACT)
    return ERROR_TYPES[error_class](code, message)


MAX_FAILURE_MESSAGE_CHARS = 300
"""A failure message crossing into Temporal is cut to this many characters (at most ~1.2 KB of UTF-8)."""
MAX_CODE_CHARS = 80
INTERNAL_ERROR = "internal_error"
"""The code of an exception that is not a :class:`SupportError`: a bug or an unexpected library error."""


def bounded(text: str, limit: int = MAX_FAILURE_MESSAGE_CHARS) -> str:
    """``text`` on one line and at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def to_application_error(error: BaseException, *, attempt: int | None = None) -> ApplicationError:
    """The one place where a failure becomes a Temporal ``ApplicationError`` and its retry behaviour.

    The result is bounded whatever ``error`` carried: a one-line message of at most
    :data:`MAX_FAILURE_MESSAGE_CHARS` characters, details of a few small fields (code, class, attempt;
    for a failed model request also ``model`` and ``usage`` when known), and no cause (raise
    it ``from None``). Temporal keeps an activity's last failure only up to a few kilobytes, so an
    error that dragged its whole cause chain along (an MCP/anyio exception group with tracebacks)
    would reach the workflow and the operator as "Failure exceeds size limit" instead of its reason.

    A :class:`SupportError` keeps its class and code. An ``ApplicationError`` raised by hand keeps
    its type and retry flag. Anything else is a bug or an unexpected library failure: it is reported
    as ``internal_error`` with its exception type, and retried as transient. ``attempt`` (the activity
    attempt that failed) is recorded in the details when given.
    """
    from datetime import timedelta

    if isinstance(error, SupportError):
        code, error_type, message = error.code, error.error_class.value, error.message
        retryable = error.retryable
        delay = timedelta(seconds=error.retry_after_seconds) if error.retry_after_seconds else None
    elif isinstance(error, ApplicationError):
        code, message = error.type or INTERNAL_ERROR, error.message
        error_type = error.type or ErrorClass.TRANSIENT.value
        retryable, delay = not error.non_retryable, error.next_retry_delay
    else:
        code, error_type = INTERNAL_ERROR, ErrorClass.TRANSIENT.value
        message, retryable, delay = f"{type(error).__name__}: {error}", True, None
    code = bounded(code, MAX_CODE_CHARS)
    details: dict[str, object] = {"code": code, "error_class": bounded(error_type, MAX_CODE_CHARS)}
    if attempt is not None:
        details["attempt"] = attempt
    details.update(_model_details(error))
    return ApplicationError(
        bounded(f"{code}: {message}"),
        details,
        type=bounded(error_type, MAX_CODE_CHARS),
        non_retryable=not retryable,
        next_retry_delay=delay,
    )


USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _model_details(error: BaseException) -> dict[str, object]:
    """``model`` and ``usage`` of a failed model request, when known: a bounded name, three integers."""
    details: dict[str, object] = {}
    model = getattr(error, "model", None) if isinstance(error, SupportError) else None
    if isinstance(model, str) and model.strip():
        details["model"] = bounded(model, MAX_CODE_CHARS)
        provider = getattr(error, "provider", None)
        if isinstance(provider, str) and provider.strip():
            details["provider"] = bounded(provider, MAX_CODE_CHARS)
    usage = getattr(error, "usage", None) if isinstance(error, SupportError) else None
    if isinstance(usage, dict):
        counts = {name: usage.get(name) for name in USAGE_FIELDS}
        if all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 10**9 for c in counts.values()):
            details["usage"] = counts
    return details


@dataclass(frozen=True)
class ActivityFailure:
    """What the workflow reads back from a failed activity: the decoder beside the encoder above."""

    code: str
    error_class: str
    """An :class:`ErrorClass` value for the service's own failures (timeouts count as transient)."""
    message: str
    attempt: int | None
    """The attempt that failed, when the activity reported it."""
    provider: str | None = None
    model: str | None = None
    """Set when a model request reached the provider and its reply was refused."""
    usage: dict[str, int] | None = None
    """The tokens the provider reported for that reply (``prompt_tokens``, ``completion_tokens``, ``total_tokens``)."""


ACTIVITY_FAILURES = (ActivityError, ApplicationError, TemporalTimeoutError)
"""What awaiting a failed activity raises in a workflow. A regular activity's failure is an
``ActivityError`` whose cause is the activity's error; a local activity's can also arrive unwrapped,
as the ``ApplicationError`` (or timeout) itself (temporalio 1.35: a non-retryable error of a local
activity does), so a workflow catches all three and decodes them with :func:`decode_activity_failure`."""


def decode_activity_failure(error: ActivityError | ApplicationError | TemporalTimeoutError) -> ActivityFailure:
    """Decode an activity's failure produced by :func:`to_application_error` (or by a timeout): an
    ``ActivityError`` or, from a local activity, its cause itself (see :data:`ACTIVITY_FAILURES`)."""
    cause = error.cause if isinstance(error, ActivityError) else error
    if not isinstance(cause, ApplicationError):
        return ActivityFailure("activity_timeout", ErrorClass.TRANSIENT.value, "activity_timeout", None)
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    code = bounded(str(details.get("code", cause.type or "unknown")), MAX_CODE_CHARS)
    message = bounded(cause.message or code)
    if not message.startswith(f"{code}:"):
        message = bounded(f"{code}: {message}")
    attempt = details.get("attempt")
    model, provider, usage = details.get("model"), details.get("provider"), details.get("usage")
    counts = {name: usage.get(name) for name in USAGE_FIELDS} if isinstance(usage, dict) else {}
    reported = {name: c for name, c in counts.items() if isinstance(c, int) and c >= 0}
    return ActivityFailure(
        code=code,
        error_class=cause.type or ErrorClass.TRANSIENT.value,
        message=message,
        attempt=attempt if isinstance(attempt, int) and attempt > 0 else None,
        provider=bounded(provider, MAX_CODE_CHARS) if isinstance(provider, str) else None,
        model=bounded(model, MAX_CODE_CHARS) if isinstance(model, str) else None,
        usage=reported if len(reported) == len(USAGE_FIELDS) else None,
    )
