"""Error classes (SPEC §8), named once and used everywhere.

Every failure the service raises on purpose is a :class:`SupportError` with one of five classes. The
class alone decides whether Temporal retries: only ``transient`` errors are retried. The mapping to
Temporal's ``ApplicationError`` lives in :func:`to_application_error` and nowhere else; the way back,
in workflow code, is :func:`decode_activity_failure`, which rebuilds the same typed class.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, ClassVar, NewType, Self, TypeAlias

from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError


class ErrorClass(StrEnum):
    TRANSIENT = "transient"
    CONTRACT = "contract"
    AUTHORIZATION = "authorization"
    BUSINESS = "business"
    CONFIGURATION = "configuration"


WireCode = NewType("WireCode", str)
"""A code that arrived as text from across a wire (an activity's failure, a commerce tool error) and is
rebuilt as it came: only the decoders here make one. Code that raises names an enum member (each room
keeps its codes in a ``StrEnum`` beside its errors), so a bare string literal is a type error."""

ErrorCode: TypeAlias = StrEnum | WireCode
"""What a :class:`SupportError`'s ``code`` is: a member of a room's code enum, or a decoded wire code."""


class SupportError(Exception):
    """A typed, classed failure with a stable machine-readable ``code``."""

    error_class: ClassVar[ErrorClass] = ErrorClass.BUSINESS

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retry_after_seconds: float | None = None,
        model: str | None = None,
        provider: str | None = None,
        usage: dict[str, int] | None = None,
        attempt: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_seconds = retry_after_seconds
        self.model = model
        """The model that was called, when the failure came after a provider request reached it."""
        self.provider = provider
        """The provider of that model (``deepseek``, ``openai-compatible``), when ``model`` is set."""
        self.usage = usage
        """The token counts the provider reported for a reply that was then refused."""
        self.attempt = attempt
        """The activity attempt that failed, when the error was decoded from an activity's failure."""

    @property
    def retryable(self) -> bool:
        return self.error_class is ErrorClass.TRANSIENT

    @property
    def reported_class(self) -> str:
        """The class as an activity's failure names it: the :class:`ErrorClass` value."""
        return self.error_class.value

    def naming_model(self, model: str, provider: str | None, usage: dict[str, int] | None = None) -> Self:
        """This failure built again, of the same class, naming the model whose server answered the
        request, its provider and the usage it reported (a refused reply is still counted)."""
        return type(self)(
            self.code,
            self.message,
            retry_after_seconds=self.retry_after_seconds,
            model=model,
            provider=provider,
            usage=usage,
            attempt=self.attempt,
        )

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


class CommerceErrorCode(StrEnum):
    """The stable codes of the commerce server's refusals and of the commerce client's own failures: the
    server sends the code in a tool error, and clients rebuild the typed error from it with
    :func:`error_from_code`."""

    ORDER_NOT_ACCESSIBLE = "order_not_accessible"
    SHIPMENT_NOT_ACCESSIBLE = "shipment_not_accessible"
    INVOICE_NOT_ACCESSIBLE = "invoice_not_accessible"
    TICKET_NOT_ACCESSIBLE = "ticket_not_accessible"
    PRODUCT_NOT_FOUND = "product_not_found"
    CUSTOMER_NOT_FOUND = "customer_not_found"
    APPROVAL_INVALID = "approval_invalid"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_SIGNATURE_REQUIRED = "approval_signature_required"
    APPROVAL_SIGNATURE_INVALID = "approval_signature_invalid"
    APPROVAL_REUSED = "approval_reused"
    APPLICANT_UNVERIFIED = "applicant_unverified"
    COMMERCE_KEYS_UNAVAILABLE = "commerce_keys_unavailable"
    QUOTE_CHANGED = "quote_changed"
    REFUND_NOT_ELIGIBLE = "refund_not_eligible"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    REQUEST_IN_FLIGHT = "request_in_flight"
    ACTION_NOT_ALLOWED = "action_not_allowed"
    ACTION_NOT_ELIGIBLE = "action_not_eligible"
    ACTION_CAP_REACHED = "action_cap_reached"
    ACTION_CHANGED = "action_changed"
    PROPOSAL_NOT_ACCESSIBLE = "proposal_not_accessible"
    PROPOSAL_EXPIRED = "proposal_expired"
    CONFIRMATION_REQUIRED = "confirmation_required"
    CONFIRMATION_INVALID = "confirmation_invalid"
    CASE_CLOSED_UNPAID = "case_closed_unpaid"
    CASE_ALREADY_PAID = "case_already_paid"
    ACTION_EXECUTED = "action_executed"
    LEDGER_MISMATCH = "ledger_mismatch"
    INVALID_ARGUMENT = "invalid_argument"
    TOOL_CALL_REJECTED = "tool_call_rejected"
    SCOPE_MISSING = "scope_missing"
    TOKEN_REJECTED = "token_rejected"
    DATABASE_UNAVAILABLE = "database_unavailable"
    COMMERCE_UNAVAILABLE = "commerce_unavailable"
    COMMERCE_TIMEOUT = "commerce_timeout"
    INTERNAL_ERROR = "internal_error"


COMMERCE_ERROR_CLASSES: dict[str, ErrorClass] = {
    CommerceErrorCode.ORDER_NOT_ACCESSIBLE: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.SHIPMENT_NOT_ACCESSIBLE: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.INVOICE_NOT_ACCESSIBLE: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.TICKET_NOT_ACCESSIBLE: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.PRODUCT_NOT_FOUND: ErrorClass.BUSINESS,
    CommerceErrorCode.CUSTOMER_NOT_FOUND: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.APPROVAL_INVALID: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.APPROVAL_EXPIRED: ErrorClass.BUSINESS,
    CommerceErrorCode.APPROVAL_SIGNATURE_REQUIRED: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.APPROVAL_SIGNATURE_INVALID: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.APPROVAL_REUSED: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.APPLICANT_UNVERIFIED: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.COMMERCE_KEYS_UNAVAILABLE: ErrorClass.CONFIGURATION,
    CommerceErrorCode.QUOTE_CHANGED: ErrorClass.BUSINESS,
    CommerceErrorCode.REFUND_NOT_ELIGIBLE: ErrorClass.BUSINESS,
    CommerceErrorCode.IDEMPOTENCY_CONFLICT: ErrorClass.BUSINESS,
    CommerceErrorCode.REQUEST_IN_FLIGHT: ErrorClass.TRANSIENT,
    CommerceErrorCode.ACTION_NOT_ALLOWED: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.ACTION_NOT_ELIGIBLE: ErrorClass.BUSINESS,
    CommerceErrorCode.ACTION_CAP_REACHED: ErrorClass.BUSINESS,
    CommerceErrorCode.ACTION_CHANGED: ErrorClass.BUSINESS,
    CommerceErrorCode.PROPOSAL_NOT_ACCESSIBLE: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.PROPOSAL_EXPIRED: ErrorClass.BUSINESS,
    CommerceErrorCode.CONFIRMATION_REQUIRED: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.CONFIRMATION_INVALID: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.CASE_CLOSED_UNPAID: ErrorClass.BUSINESS,
    CommerceErrorCode.CASE_ALREADY_PAID: ErrorClass.BUSINESS,
    CommerceErrorCode.ACTION_EXECUTED: ErrorClass.BUSINESS,
    CommerceErrorCode.LEDGER_MISMATCH: ErrorClass.BUSINESS,
    CommerceErrorCode.INVALID_ARGUMENT: ErrorClass.CONTRACT,
    CommerceErrorCode.TOOL_CALL_REJECTED: ErrorClass.CONTRACT,
    CommerceErrorCode.SCOPE_MISSING: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.TOKEN_REJECTED: ErrorClass.AUTHORIZATION,
    CommerceErrorCode.DATABASE_UNAVAILABLE: ErrorClass.TRANSIENT,
    CommerceErrorCode.COMMERCE_UNAVAILABLE: ErrorClass.TRANSIENT,
    CommerceErrorCode.COMMERCE_TIMEOUT: ErrorClass.TRANSIENT,
    CommerceErrorCode.INTERNAL_ERROR: ErrorClass.TRANSIENT,
}
"""The class of each commerce code; an unknown code is a contract error."""


class WorkerErrorCode(StrEnum):
    """Codes the worker's tool and settlement activities raise themselves (they reach the workflow in the
    activity's failure, or the model in a refused tool observation)."""

    IDENTITY_REJECTED = "identity_rejected"
    TOOL_NOT_ALLOWED = "tool_not_allowed"
    PASSAGE_NOT_ACCESSIBLE = "passage_not_accessible"
    INVALID_COMMERCE_RESPONSE = "invalid_commerce_response"
    SETTLE_REQUEST_INVALID = "settle_request_invalid"
    CLOSE_REQUEST_INVALID = "close_request_invalid"
    RECEIPT_MISMATCH = "receipt_mismatch"
    ACTION_REQUEST_INVALID = "action_request_invalid"
    COMMERCE_TOKEN_REJECTED = "commerce_token_rejected"
    COMMERCE_UNREACHABLE = "commerce_unreachable"
    DIRECTORY_HAS_NO_CUSTOMER = "directory_has_no_customer"


class SettingCode(StrEnum):
    """The codes of a process setting (an environment variable) that cannot be used: the process stops."""

    INVALID_LOG_FORMAT = "invalid_log_format"
    INVALID_LOG_LEVEL = "invalid_log_level"
    INVALID_METRICS_PORT = "invalid_metrics_port"
    TRACING_CONFIG = "tracing_config"
    DATA_CONVERTER = "data_converter"
    TOKEN_SECRET_MISSING = "token_secret_missing"


def error_from_code(code: str, message: str) -> SupportError:
    """Rebuild a typed error from a stable code (unknown codes are treated as contract errors)."""
    error_class = COMMERCE_ERROR_CLASSES.get(code, ErrorClass.CONTRACT)
    return ERROR_TYPES[error_class](code if isinstance(code, StrEnum) else WireCode(code), message)


MAX_FAILURE_MESSAGE_CHARS = 300
"""A failure message crossing into Temporal is cut to this many characters (at most ~1.2 KB of UTF-8)."""
MAX_CODE_CHARS = 80
INTERNAL_ERROR = CommerceErrorCode.INTERNAL_ERROR
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

    code: str
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
    if not isinstance(error, SupportError):
        return details
    if isinstance(error.model, str) and error.model.strip():
        details["model"] = bounded(error.model, MAX_CODE_CHARS)
        if isinstance(error.provider, str) and error.provider.strip():
            details["provider"] = bounded(error.provider, MAX_CODE_CHARS)
    if isinstance(error.usage, dict):
        counts = {name: error.usage.get(name) for name in USAGE_FIELDS}
        if all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 10**9 for c in counts.values()):
            details["usage"] = counts
    return details


class UnclassifiedError(TransientError):
    """An activity's failure of a type that is no :class:`ErrorClass` (Temporal's own, such as
    ``NotFoundError`` for an activity no worker registers): handled as transient, its type kept."""

    def __init__(self, failure_type: str, code: ErrorCode, message: str, **fields: Any) -> None:
        super().__init__(code, message, **fields)
        self.failure_type = failure_type

    @property
    def reported_class(self) -> str:
        """The type the failure arrived with."""
        return self.failure_type


class ActivityFailureCode(StrEnum):
    ACTIVITY_TIMEOUT = "activity_timeout"
    """An activity that failed without an error of its own (a timeout, a cancellation)."""


ACTIVITY_TIMEOUT = ActivityFailureCode.ACTIVITY_TIMEOUT


ACTIVITY_FAILURES = (ActivityError, ApplicationError, TemporalTimeoutError)
"""What awaiting a failed activity raises in a workflow. A regular activity's failure is an
``ActivityError`` whose cause is the activity's error; a local activity's can also arrive unwrapped,
as the ``ApplicationError`` (or timeout) itself (temporalio 1.35: a non-retryable error of a local
activity does), so a workflow catches all three and decodes them with :func:`decode_activity_failure`."""


def decode_activity_failure(error: ActivityError | ApplicationError | TemporalTimeoutError) -> SupportError:
    """The typed error an activity's failure carries, rebuilt from what :func:`to_application_error`
    wrote (or from a timeout): an ``ActivityError`` or, from a local activity, its cause itself (see
    :data:`ACTIVITY_FAILURES`). Workflow code branches on the class it returns.

    The class comes from the failure's type (:class:`UnclassifiedError` for a type that is no error
    class), and ``str()`` of the result is the failure's bounded one-line message, which starts with
    its code. A failure without an ``ApplicationError`` (a timeout) is a transient ``activity_timeout``.
    """
    cause = error.cause if isinstance(error, ActivityError) else error
    if not isinstance(cause, ApplicationError):
        return TransientError(ACTIVITY_TIMEOUT, "The activity failed without an error of its own.")
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    code = WireCode(bounded(str(details.get("code", cause.type or "unknown")), MAX_CODE_CHARS))
    text = bounded(cause.message or code)
    if not text.startswith(f"{code}:"):
        text = bounded(f"{code}: {text}")
    attempt, model, provider = details.get("attempt"), details.get("model"), details.get("provider")
    fields: dict[str, Any] = {
        "attempt": attempt if isinstance(attempt, int) and attempt > 0 else None,
        "model": bounded(model, MAX_CODE_CHARS) if isinstance(model, str) else None,
        "provider": bounded(provider, MAX_CODE_CHARS) if isinstance(provider, str) else None,
        "usage": _reported_usage(details.get("usage")),
    }
    message = text.removeprefix(f"{code}:").removeprefix(" ")
    failure_type = cause.type or ErrorClass.TRANSIENT.value
    if failure_type in ERROR_TYPES:
        return ERROR_TYPES[ErrorClass(failure_type)](code, message, **fields)
    return UnclassifiedError(failure_type, code, message, **fields)


def _reported_usage(usage: object) -> dict[str, int] | None:
    """The three token counts a failure's details reported, or None unless all three are there."""
    counts = {name: usage.get(name) for name in USAGE_FIELDS} if isinstance(usage, dict) else {}
    reported = {name: c for name, c in counts.items() if isinstance(c, int) and c >= 0}
    return reported if len(reported) == len(USAGE_FIELDS) else None


@contextmanager
def rebuilt_activity_failures() -> Iterator[None]:
    """Awaiting an activity inside this block raises its failure as the typed :class:`SupportError` it
    carries (:func:`decode_activity_failure`), whichever of :data:`ACTIVITY_FAILURES` arrived; the
    caller catches ``SupportError`` and branches on the class. Only the failure's type changes: what
    the workflow schedules, and when, is the same."""
    try:
        yield
    except ACTIVITY_FAILURES as error:
        raise decode_activity_failure(error) from None
