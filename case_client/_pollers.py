"""Who polls a task queue, and how recently: a worker that is there (perhaps busy) told apart from none.

Temporal's ``DescribeTaskQueue`` lists the workers that polled a queue with the time of their last
poll (``last_access_time``), for a few minutes after they stopped. A live worker starts a new long
poll at least once a minute, so a poller seen within :data:`POLLER_FRESH_SECONDS` is a worker that
is there: when it does not answer a query within seconds it is busy, not gone. The legacy form of the
call lists the pollers of every build on the queue with their deployment version, which is what this
needs (the enhanced, per-version form lists nothing for Worker Deployment versions).

Public helpers (the console reuses them to say "decisions wait" when no worker polls):

* :func:`describe_pollers` (async): the queue's :class:`QueuePollers`, asked again while a busy
  server cancels the describe; ``temporal_unavailable`` when it cannot be described.
* :class:`QueuePollers`: ``presence`` (a :class:`WorkerPresence`), ``live`` (the fresh pollers),
  ``last_seen_seconds`` (how long ago the latest poll was) and ``sentence()`` for a person.
* :func:`pollers_from` (pure): the pollers of describe responses, for tests with doubles.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from functools import partial

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import PollerInfo, TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from case_client._busy_server import ask_again_while_busy
from case_client._codes import ClientErrorCode
from contracts.errors import TransientError

DESCRIBE_TIMEOUT = timedelta(seconds=5)
POLLER_FRESH_SECONDS = 90.0
"""A live worker re-polls its task queue at least once a minute (a long poll lasts up to ~70 s); a
poller seen longer ago than this is gone (Temporal lists dead pollers for a few minutes)."""
QUEUE_KINDS = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)


class WorkerPresence(StrEnum):
    """Whether a worker is there to run a queue's tasks."""

    POLLING = "polling"
    """A worker polled within :data:`POLLER_FRESH_SECONDS`: it is there, perhaps busy."""
    ABSENT = "absent"
    """No worker polled within :data:`POLLER_FRESH_SECONDS` (none ever, or all stopped)."""


@dataclass(frozen=True)
class Poller:
    """One worker (identity) that polled the queue, by its latest poll of any task type."""

    identity: str
    seen_seconds_ago: float
    build_id: str | None = None
    """The worker's deployment build, when it polls as a version of a Worker Deployment."""


@dataclass(frozen=True)
class QueuePollers:
    """The workers the server lists for one task queue, freshest first."""

    task_queue: str
    pollers: tuple[Poller, ...] = ()
    fresh_seconds: float = POLLER_FRESH_SECONDS

    @property
    def live(self) -> tuple[Poller, ...]:
        return tuple(p for p in self.pollers if p.seen_seconds_ago <= self.fresh_seconds)

    @property
    def presence(self) -> WorkerPresence:
        return WorkerPresence.POLLING if self.live else WorkerPresence.ABSENT

    @property
    def last_seen_seconds(self) -> float | None:
        """How long ago the latest poll of any listed worker was; None when none is listed."""
        return min((p.seen_seconds_ago for p in self.pollers), default=None)

    def of_build(self, build_id: str | None) -> QueuePollers:
        """Only the workers of ``build_id`` (a pinned case runs on its build alone); all when None."""
        if not build_id:
            return self
        kept = tuple(p for p in self.pollers if p.build_id in (None, build_id))
        return QueuePollers(self.task_queue, kept, self.fresh_seconds)

    def sentence(self) -> str:
        """For a person: ``a worker polled task queue 'q' 3 s ago`` or why none is there."""
        queue = f"task queue {self.task_queue!r}"
        live = self.live
        if live:
            who = "a worker" if len(live) == 1 else f"{len(live)} workers"
            return f"{who} polled {queue} {seconds_text(live[0].seen_seconds_ago)} ago"
        last = self.last_seen_seconds
        if last is None:
            return f"no worker polls {queue}"
        return f"no worker has polled {queue} for {seconds_text(last)}"


def seconds_text(seconds: float) -> str:
    """``3 s``, ``95 s``, ``4 min``: a duration as a person reads it."""
    whole = max(0, round(seconds))
    return f"{whole} s" if whole < 180 else f"{whole // 60} min"


def pollers_from(pollers: Iterable[PollerInfo], *, now: float) -> tuple[Poller, ...]:
    """One :class:`Poller` per identity (its latest poll across the given lists), freshest first."""
    latest: dict[str, Poller] = {}
    for info in pollers:
        age = max(0.0, now - info.last_access_time.ToNanoseconds() / 1e9)
        build = info.deployment_options.build_id if info.HasField("deployment_options") else ""
        seen = latest.get(info.identity)
        if seen is None or age < seen.seen_seconds_ago:
            latest[info.identity] = Poller(info.identity, age, build or None)
    return tuple(sorted(latest.values(), key=lambda p: p.seen_seconds_ago))


async def describe_pollers(client: Client, task_queue: str, *, clock: Callable[[], float] = time.time) -> QueuePollers:
    """The workers that polled ``task_queue`` (workflow or activity tasks) and when: one legacy
    describe per task type, each asked again while the busy server cancels it
    (:func:`case_client._busy_server.ask_again_while_busy`); ``temporal_unavailable`` otherwise."""
    listed: list[PollerInfo] = []
    for kind in QUEUE_KINDS:
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
        )
        try:
            response = await ask_again_while_busy(
                partial(client.workflow_service.describe_task_queue, request, timeout=DESCRIBE_TIMEOUT)
            )
        except RPCError as error:
            raise TransientError(
                ClientErrorCode.TEMPORAL_UNAVAILABLE, f"cannot describe task queue {task_queue!r}: {error}"
            ) from None
        listed += response.pollers
    return QueuePollers(task_queue, pollers_from(listed, now=clock()))
