"""Error classes (SPEC §8), named once and used everywhere.

Every failure the service raises on purpose is a :class:`SupportError` with one of five classes. The
class alone decides whether Temporal retries: only ``transient`` errors are retried. The mapping to
Temporal's ``ApplicationError`` lives in :func:`to_application_error` and nowhere else.
"""

from __future__ import annotations

from enum import StrEnum

from temporalio.exceptions import ApplicationError


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
    "quote_changed": ErrorClass.BUSINESS,
    "refund_not_eligible": ErrorClass.BUSINESS,
    "idempotency_conflict": ErrorClass.BUSINESS,
    "invalid_argument": ErrorClass.CONTRACT,
    "tool_call_rejected": ErrorClass.CONTRACT,
    "scope_missing": ErrorClass.AUTHORIZATION,
    "token_rejected": ErrorClass.AUTHORIZATION,
    "database_unavailable": ErrorClass.TRANSIENT,
    "commerce_unavailable": ErrorClass.TRANSIENT,
    "internal_error": ErrorClass.TRANSIENT,
}


def error_from_code(code: str, message: str) -> SupportError:
    """Rebuild a typed error from a stable code (unknown codes are treated as contract errors)."""
    error_class = COMMERCE_ERROR_CLASSES.get(code, ErrorClass.CONTRACT)
    return ERROR_TYPES[error_class](code, message)


def to_application_error(error: SupportError, *, attempt: int | None = None) -> ApplicationError:
    """The one place where an error class becomes Temporal retry behaviour.

    ``attempt`` (the activity attempt that failed) is recorded in the details when given.
    """
    from datetime import timedelta

    delay = timedelta(seconds=error.retry_after_seconds) if error.retry_after_seconds else None
    details: dict[str, object] = {"code": error.code, "error_class": error.error_class.value}
    if attempt is not None:
        details["attempt"] = attempt
    return ApplicationError(
        f"{error.code}: {error.message}",
        details,
        type=error.error_class.value,
        non_retryable=not error.retryable,
        next_retry_delay=delay,
    )
