"""Failures that cross into Temporal are bounded, whatever they dragged along (SPEC §8)."""

from __future__ import annotations

import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from temporalio.testing import ActivityEnvironment

from activities.runtime.boundary import run_within_boundary
from contracts.errors import (
    ERROR_TYPES,
    MAX_FAILURE_MESSAGE_CHARS,
    CommerceErrorCode,
    ContractError,
    ErrorClass,
    SupportError,
    TransientError,
    UnclassifiedError,
    WireCode,
    decode_activity_failure,
    rebuilt_activity_failures,
    to_application_error,
)


def _exception_group_with_tracebacks() -> BaseExceptionGroup:
    """What an MCP/anyio transport failure looks like: nested groups, long messages, tracebacks."""
    leaves: list[Exception] = []
    for index in range(20):
        try:
            raise OSError(f"pipe {index} broke: " + "x" * 2000)
        except OSError as error:
            leaves.append(error)
    return BaseExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", leaves)])


def _encode(error: BaseException) -> Failure:
    failure = Failure()
    converter = DataConverter.default
    converter.failure_converter.to_failure(error, converter.payload_converter, failure)
    return failure


async def _raised_through_boundary(error: Exception) -> ApplicationError:
    async def body() -> None:
        try:
            raise _exception_group_with_tracebacks()
        except BaseExceptionGroup as group:
            raise error from group

    async def activity_fn() -> None:
        await run_within_boundary(body)

    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(activity_fn)
    return caught.value


async def test_a_support_error_with_a_huge_cause_chain_crosses_as_a_few_hundred_bytes() -> None:
    error = TransientError(WireCode("commerce_unavailable"), "The commerce server is unavailable (" + "y" * 5000 + ").")
    raised = await _raised_through_boundary(error)

    assert raised.__cause__ is None and raised.__suppress_context__
    failure = _encode(raised)
    assert not failure.HasField("cause")
    assert len(failure.message) <= MAX_FAILURE_MESSAGE_CHARS and failure.message.startswith("commerce_unavailable: ")
    assert failure.ByteSize() < 2048, failure.ByteSize()
    assert failure.application_failure_info.type == "transient"
    assert not failure.application_failure_info.non_retryable


async def test_an_unexpected_exception_is_a_bounded_retryable_internal_error() -> None:
    raised = await _raised_through_boundary(KeyError("k" * 10_000))
    failure = _encode(raised)
    assert failure.ByteSize() < 2048 and not failure.HasField("cause")
    assert raised.type == ErrorClass.TRANSIENT.value and not raised.non_retryable
    assert raised.details[0]["code"] == "internal_error" and raised.message.startswith("internal_error: KeyError")


def test_the_decoder_reads_back_what_the_encoder_wrote() -> None:
    encoded = to_application_error(ContractError(WireCode("truncated_or_malformed"), "cut\noff " * 200), attempt=3)
    activity_error = ActivityError(
        "activity failed",
        scheduled_event_id=5,
        started_event_id=6,
        identity="worker",
        activity_type="plan_case",
        activity_id="1",
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    activity_error.__cause__ = encoded
    decoded = decode_activity_failure(activity_error)
    assert (decoded.code, decoded.error_class, decoded.attempt) == ("truncated_or_malformed", "contract", 3)
    assert "\n" not in decoded.message and len(decoded.message) <= MAX_FAILURE_MESSAGE_CHARS


def _activity_error(cause: BaseException) -> ActivityError:
    error = ActivityError(
        "activity failed",
        scheduled_event_id=5,
        started_event_id=6,
        identity="worker",
        activity_type="execute_refund",
        activity_id="1",
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    error.__cause__ = cause
    return error


@pytest.mark.parametrize("error_type", list(ERROR_TYPES.values()))
def test_the_decoder_rebuilds_the_typed_class_that_was_raised(error_type: type[SupportError]) -> None:
    encoded = to_application_error(error_type(WireCode("quote_changed"), "The quote changed."), attempt=2)
    for failure in (_activity_error(encoded), encoded):  # a local activity's failure may arrive unwrapped
        decoded = decode_activity_failure(failure)
        assert type(decoded) is error_type and decoded.reported_class == error_type.error_class.value
        assert (decoded.code, decoded.attempt, str(decoded)) == ("quote_changed", 2, encoded.message)


def test_a_refused_model_reply_crosses_with_its_model_provider_and_usage() -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    error = ContractError(
        WireCode("truncated_or_malformed"), "cut off", model="m-1-2026", provider="deepseek", usage=usage
    )
    encoded = to_application_error(error, attempt=1)
    assert encoded.details[0] == {
        "code": "truncated_or_malformed",
        "error_class": "contract",
        "attempt": 1,
        "model": "m-1-2026",
        "provider": "deepseek",
        "usage": usage,
    }
    decoded = decode_activity_failure(_activity_error(encoded))
    assert isinstance(decoded, ContractError)
    assert (decoded.model, decoded.provider, decoded.usage) == ("m-1-2026", "deepseek", usage)


def test_naming_the_model_builds_the_same_class_again() -> None:
    error = TransientError(WireCode("provider_rate_limited"), "slow down", retry_after_seconds=7.0)
    named = error.naming_model("m-1", "deepseek")
    assert type(named) is TransientError and named is not error and error.model is None
    assert (named.code, named.message, named.retry_after_seconds) == ("provider_rate_limited", "slow down", 7.0)
    assert (named.model, named.provider, named.usage) == ("m-1", "deepseek", None)


def test_a_failure_of_an_unknown_type_is_transient_and_keeps_its_type() -> None:
    unknown = ApplicationError("Activity function x is not registered on this worker", type="NotFoundError")
    decoded = decode_activity_failure(_activity_error(unknown))
    assert isinstance(decoded, UnclassifiedError) and isinstance(decoded, TransientError)
    assert (decoded.reported_class, decoded.code, decoded.attempt) == ("NotFoundError", "NotFoundError", None)
    assert str(decoded) == "NotFoundError: Activity function x is not registered on this worker"


def test_a_failure_without_an_application_error_is_a_transient_timeout() -> None:
    timed_out = TemporalTimeoutError("timed out", type=TimeoutType.START_TO_CLOSE, last_heartbeat_details=[])
    for failure in (_activity_error(timed_out), timed_out):
        decoded = decode_activity_failure(failure)
        assert type(decoded) is TransientError and decoded.code == "activity_timeout"
        assert decoded.reported_class == "transient" and decoded.attempt is None


def test_the_rebuilding_block_raises_each_activity_failure_as_its_typed_error() -> None:
    encoded = to_application_error(ContractError(CommerceErrorCode.QUOTE_CHANGED, "The quote changed."), attempt=2)
    timed_out = TemporalTimeoutError("timed out", type=TimeoutType.START_TO_CLOSE, last_heartbeat_details=[])
    for failure, expected in (
        (_activity_error(encoded), ContractError),
        (encoded, ContractError),
        (timed_out, TransientError),
    ):
        with pytest.raises(SupportError) as raised, rebuilt_activity_failures():
            raise failure
        assert type(raised.value) is expected and raised.value.__cause__ is None
    with pytest.raises(ValueError), rebuilt_activity_failures():  # anything else passes through as it is
        raise ValueError("not an activity's failure")
