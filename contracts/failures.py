"""The failure converter of every client and worker: refusals cross into Temporal without a stack trace.

A refused review update or a refused start input is the sender's mistake, not a crash: whoever sent
it (the SDK, the HTTP API the Web UI calls, the Web UI's dialog, the Temporal CLI) is shown the one
sentence its message carries, never the worker's Python stack with its file paths. Every other
failure keeps Temporal's default conversion, stack trace included, for the operator who debugs it.
"""

from __future__ import annotations

from temporalio.api.failure.v1 import Failure
from temporalio.converter import DefaultFailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError

from contracts.names import CASE_INPUT_REFUSED, REVIEW_REFUSED

REFUSAL_TYPES = frozenset({REVIEW_REFUSED, CASE_INPUT_REFUSED})
"""``ApplicationError`` types that are refusals of what a sender sent."""


class CaseFailureConverter(DefaultFailureConverter):
    """Temporal's default failure conversion, minus the stack trace of a refusal (:data:`REFUSAL_TYPES`)."""

    def to_failure(self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure) -> None:
        super().to_failure(exception, payload_converter, failure)
        if isinstance(exception, ApplicationError) and exception.type in REFUSAL_TYPES:
            failure.stack_trace = ""
