"""Timeouts and retry policies of every activity, in one place.

Error classes (contracts.errors) decide retries: only ``transient`` failures are retried, every other
class is listed as non-retryable here, so a refusal is never repeated.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from contracts.errors import ErrorClass

NON_RETRYABLE_TYPES = [c.value for c in ErrorClass if c is not ErrorClass.TRANSIENT]

MODEL_ATTEMPTS_PER_CALL = 3
MODEL_TIMEOUT = timedelta(seconds=60)
"""The provider call itself times out after 40 s; this leaves room for validation."""

TOOL_TIMEOUT = timedelta(seconds=30)
SETTLE_TIMEOUT = timedelta(seconds=30)
RECORD_TIMEOUT = timedelta(seconds=15)


def model_retry_policy(maximum_attempts: int) -> RetryPolicy:
    """Model calls: bounded by what is left of the case's model budget."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=20),
        maximum_attempts=maximum_attempts,
        non_retryable_error_types=NON_RETRYABLE_TYPES,
    )


TOOL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=4,
    non_retryable_error_types=NON_RETRYABLE_TYPES,
)

SETTLE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=10,
    non_retryable_error_types=NON_RETRYABLE_TYPES,
)

RECORD_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
    non_retryable_error_types=NON_RETRYABLE_TYPES,
)
