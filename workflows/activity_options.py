"""Timeouts, heartbeats and retry policies of every activity, in one place, each as one value.

Error classes (contracts.errors) decide retries: only ``transient`` failures are retried, every other
class is listed as non-retryable here, so a refusal is never repeated.

Every regular activity heartbeats (activities.runtime.boundary does it for them) and has a heartbeat timeout of
:data:`HEARTBEAT_TIMEOUT`: when a worker dies mid-activity, Temporal retries the activity on another
worker within about that long, instead of waiting out a start-to-close timeout that must be long
enough for a slow but healthy call (a model request may be allowed up to 600 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TypedDict

from temporalio.common import RetryPolicy

from contracts.errors import ErrorClass
from contracts.model_limits import MAX_MODEL_TIMEOUT_SECONDS, MODEL_ACTIVITY_MARGIN_SECONDS

NON_RETRYABLE_TYPES = [c.value for c in ErrorClass if c is not ErrorClass.TRANSIENT]

HEARTBEAT_TIMEOUT = timedelta(seconds=8)
"""With the first retry after 1 s, a killed worker's activity restarts elsewhere within ~10 s."""


class ActivityKeywords(TypedDict):
    """The keyword arguments of ``workflow.execute_activity`` that :class:`ActivityOptions` sets.

    Each key is one of temporalio's ``workflow.ActivityConfig`` (tests/workflows check that), with its
    type, so the type checker checks every key where it is splatted into ``execute_activity``.
    ``ActivityConfig`` itself would not do: its keys are all optional and include ``summary`` and
    ``activity_id``, which the call sites pass themselves.
    """

    start_to_close_timeout: timedelta
    heartbeat_timeout: timedelta
    retry_policy: RetryPolicy


class LocalActivityKeywords(TypedDict):
    """The keyword arguments of ``workflow.execute_local_activity`` that :class:`LocalActivityOptions`
    sets: keys of temporalio's ``workflow.LocalActivityConfig``, each with its type."""

    start_to_close_timeout: timedelta
    retry_policy: RetryPolicy
    local_retry_threshold: timedelta


@dataclass(frozen=True)
class ActivityOptions:
    """The timeouts and the retry policy of one kind of activity, passed together."""

    start_to_close: timedelta
    retry: RetryPolicy
    heartbeat: timedelta = HEARTBEAT_TIMEOUT

    def kwargs(self) -> ActivityKeywords:
        """Keyword arguments for ``workflow.execute_activity``."""
        return ActivityKeywords(
            start_to_close_timeout=self.start_to_close,
            heartbeat_timeout=self.heartbeat,
            retry_policy=self.retry,
        )


def _retry(*, maximum_interval: timedelta, maximum_attempts: int) -> RetryPolicy:
    """First retry after 1 s, doubling up to ``maximum_interval``; only transient failures are retried."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=maximum_interval,
        maximum_attempts=maximum_attempts,
        non_retryable_error_types=NON_RETRYABLE_TYPES,
    )


MODEL_ATTEMPTS_PER_CALL = 3


MODEL_START_TO_CLOSE = timedelta(seconds=MAX_MODEL_TIMEOUT_SECONDS + MODEL_ACTIVITY_MARGIN_SECONDS)
"""Derived from the longest request timeout an operator may set (release 0.6 on; 60 s before): the
worker's own timeout (``SUPPORT_MODEL_TIMEOUT_SECONDS``, per kind) ends a slow request first, and the
heartbeat timeout, not this, is what notices a worker that died mid-request."""


def model_options(maximum_attempts: int) -> ActivityOptions:
    """Model calls: the worker's request timeout plus validation; attempts bounded by what is left of the budget."""
    return ActivityOptions(
        start_to_close=MODEL_START_TO_CLOSE,
        retry=_retry(maximum_interval=timedelta(seconds=20), maximum_attempts=maximum_attempts),
    )


VERIFY = ActivityOptions(
    start_to_close=timedelta(seconds=15),
    retry=_retry(maximum_interval=timedelta(seconds=5), maximum_attempts=3),
)
"""Verifying the applicant's credential: a file read and a signature check."""

TOOL = ActivityOptions(
    start_to_close=timedelta(seconds=30),
    retry=_retry(maximum_interval=timedelta(seconds=10), maximum_attempts=4),
)

SETTLE = ActivityOptions(
    start_to_close=timedelta(seconds=30),
    retry=_retry(maximum_interval=timedelta(seconds=30), maximum_attempts=10),
)

PREVIEW = ActivityOptions(
    start_to_close=timedelta(seconds=30),
    retry=_retry(maximum_interval=timedelta(seconds=10), maximum_attempts=5),
)
"""Asking the commerce server to compute an action's proposal: it writes only the proposal, and a retry
stores another one that nobody is shown (only the proposal the workflow keeps is ever confirmed)."""

RECORD = ActivityOptions(
    start_to_close=timedelta(seconds=15),
    retry=_retry(maximum_interval=timedelta(seconds=10), maximum_attempts=5),
)
"""Writing the case record. A regular activity, not a local one: its input (the record, the proposal in
it) is then in the history, where ``verify`` and ``audit`` read the proposal a waiting case showed."""

CLOSE = ActivityOptions(
    start_to_close=timedelta(seconds=30),
    retry=_retry(maximum_interval=timedelta(seconds=30), maximum_attempts=10),
)
"""Closing a rejected or expired proposal at the commerce server: retried like a settlement."""


LOCAL_RETRY_THRESHOLD = timedelta(seconds=10)
"""A local activity's retry that waits less than this is slept in the worker, within the workflow
task; a longer backoff becomes a workflow timer. The policies below never back off that long."""


@dataclass(frozen=True)
class LocalActivityOptions:
    """The timeout and the retry policy of one kind of local activity (no heartbeat), passed together.

    The short steps run as local activities: no heartbeat (a local
    activity cannot heartbeat; activities.runtime.boundary only heartbeats when a heartbeat timeout is set).
    When a worker dies mid-step, its workflow task times out and another worker runs the step again
    from its first attempt.
    """

    start_to_close: timedelta
    retry: RetryPolicy

    def kwargs(self) -> LocalActivityKeywords:
        """Keyword arguments for ``workflow.execute_local_activity``."""
        return LocalActivityKeywords(
            start_to_close_timeout=self.start_to_close,
            retry_policy=self.retry,
            local_retry_threshold=LOCAL_RETRY_THRESHOLD,
        )


VERIFY_LOCAL = LocalActivityOptions(start_to_close=VERIFY.start_to_close, retry=VERIFY.retry)
"""``verify_applicant`` as a local activity: the timeout and retries of :data:`VERIFY`."""

TOOL_LOCAL = LocalActivityOptions(start_to_close=TOOL.start_to_close, retry=TOOL.retry)
"""``run_investigation_tool`` (read-only tools) as a local activity: the timeout and retries of :data:`TOOL`."""
