"""Following a case until it settles, telling a busy worker from an absent one (no printing here).

A case that waits for the customer (``waiting_customer``: the service asked something) has settled
for now like one that waits for a reviewer: the wait ends and the caller shows the question. A
conversation's turn is followed by :func:`follow_reply`: the ``reply`` update asked again until the
reply to one message exists or the case has ended.

A status query that goes unanswered for seconds does not mean the worker is gone: on a loaded machine
a live worker answers late, and a case whose model server takes minutes per request is working, not
stuck. So an unanswered query is asked again while a worker is there
(:func:`worker_presence`: its pollers seen recently), and the wait only ends early when none is. At
the deadline the case is named with what it is doing (:mod:`case_client._progress`), never blamed on
a worker that is there: :class:`WaitCode` says which of the four endings it is.

:func:`follow_until_settled` takes its reads as functions (:class:`CaseProbe`), so that its decisions
are tested with doubles and no server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from case_client._codes import WaitCode
from case_client._pollers import QueuePollers, WorkerPresence, seconds_text
from case_client._progress import CaseWork
from case_client._reading import QueryUnanswered, query_status, query_timed_out, read_handle
from contracts.case import TERMINAL_STATUSES, CaseStatus, CaseView
from contracts.conversation import MAX_REPLY_WAIT_SECONDS, ConversationView, Speaker, TurnReply
from contracts.errors import TransientError
from contracts.identity import Identity

UNCLAIMED_SECONDS = 10.0
"""A live worker holds a poll open on its queue, so a workflow task that is ready is taken at once. One
that has waited this long while no listed worker polled since it became ready has nobody to take it:
the worker that polled last has stopped (Temporal still lists it for a while)."""
SETTLED_FOR_NOW = frozenset({CaseStatus.WAITING_APPROVAL, CaseStatus.WAITING_CUSTOMER})
"""Statuses in which a case waits for a person (a reviewer, the customer) and does nothing by itself."""
UNANSWERED_GRACE_SECONDS = 15.0
"""A ``reply`` update not answered this long after the wait it asked for has not been taken up by a
worker (a busy or a stopped one): it is asked again, or at the deadline the wait ends saying so."""
REPORT_EVERY_SECONDS = 30.0
"""How often a long wait says what the case is doing (a line on stderr at the command line)."""


def worker_presence(pollers: QueuePollers, work: CaseWork | None) -> WorkerPresence:
    """Whether a worker is there for the case: one of its build polled within the fresh window, and,
    when the case's next workflow task has waited :data:`UNCLAIMED_SECONDS` or more, polled after it
    became ready."""
    relevant = pollers.of_build(work.build_id if work else None)
    if relevant.presence is WorkerPresence.ABSENT:
        return WorkerPresence.ABSENT
    unclaimed = work.unclaimed_seconds if work else None
    last_poll = relevant.last_seen_seconds
    if unclaimed is not None and unclaimed >= UNCLAIMED_SECONDS and last_poll is not None and last_poll > unclaimed:
        return WorkerPresence.ABSENT
    return WorkerPresence.POLLING


@dataclass(frozen=True)
class Waiting:
    """Where a wait for a case stands: reported every :data:`REPORT_EVERY_SECONDS`, and the reason of
    :func:`gave_up` at the deadline."""

    case_id: str
    waited_seconds: float
    work: CaseWork
    unanswered_seconds: float | None = None
    """How long the status query has gone unanswered (the worker is busy); None when it answered."""
    pollers: QueuePollers | None = None

    @property
    def code(self) -> WaitCode:
        if self.work.commerce_outage is not None:
            return WaitCode.COMMERCE_UNAVAILABLE
        if self.unanswered_seconds is not None:
            return WaitCode.WORKER_BUSY
        return WaitCode.CASE_WORKING

    def sentence(self) -> str:
        """``case C: still working after 95 s: waiting for the model server (…)`` and the like."""
        doing = self.work.sentence()
        if self.code is WaitCode.COMMERCE_UNAVAILABLE:
            return f"case {self.case_id}: {doing}"
        if self.unanswered_seconds is not None:
            seen = f" ({self.pollers.sentence()})" if self.pollers is not None else ""
            return (
                f"case {self.case_id}: the worker is busy{seen} and has not answered a status query for "
                f"{seconds_text(self.unanswered_seconds)}; the case: {doing}"
            )
        return f"case {self.case_id}: still working after {seconds_text(self.waited_seconds)}: {doing}"


def gave_up(waiting: Waiting) -> TransientError:
    """The error a wait ends with at its deadline: what the case is doing, not a worker to check."""
    return TransientError(waiting.code, waiting.sentence())


def worker_unavailable(case_id: str, pollers: QueuePollers, work: CaseWork, start_hint: str) -> TransientError:
    """The case waits and no worker is there to run it (:func:`worker_presence` said so)."""
    relevant = pollers.of_build(work.build_id)
    unclaimed, last_poll = work.unclaimed_seconds, relevant.last_seen_seconds
    if relevant.presence is WorkerPresence.POLLING and unclaimed is not None and last_poll is not None:
        why = (
            f"no worker has taken its next step in {seconds_text(unclaimed)}, and none has polled task queue "
            f"{pollers.task_queue!r} since (the last poll was {seconds_text(last_poll)} ago: that worker has stopped)"
        )
    else:
        build = f" of build {work.build_id}" if work.build_id and relevant.pollers != pollers.pollers else ""
        why = relevant.sentence().replace("worker", f"worker{build}", 1)
    hint = f"; start one: {start_hint}" if start_hint else ""
    return TransientError(WaitCode.WORKER_UNAVAILABLE, f"case {case_id}: {why}{hint}")


@dataclass(frozen=True)
class CaseProbe:
    """The reads a wait makes, as functions (the case handle's, or a test's doubles).

    ``read(first)`` is the status query (``first``: the first read, which may check the worker first);
    it raises :class:`~case_client._reading.QueryUnanswered` when the query timed out. ``ended(seconds)``
    is the workflow's result. ``work()`` describes what the case is doing and ``pollers(work)`` who polls
    its task queue.
    """

    case_id: str
    read: Callable[[bool], Awaitable[CaseView]]
    ended: Callable[[float], Awaitable[CaseView]]
    work: Callable[[], Awaitable[CaseWork]]
    pollers: Callable[[CaseWork], Awaitable[QueuePollers]]
    start_hint: str = ""


def status_reader(
    client: Client, workflow: WorkflowHandle, viewer: Identity | None, start_hint: str
) -> Callable[[bool], Awaitable[CaseView]]:
    """A :class:`CaseProbe`'s ``read``: for ``viewer`` (a person: only a case they may see, the worker
    checked on the first read), else the status query as it is; a query a busy worker leaves
    unanswered is :class:`QueryUnanswered` (asked again, like a slow case)."""

    async def read(first: bool) -> CaseView:
        if viewer is not None:
            return await read_handle(client, workflow, viewer, start_hint=start_hint, check_worker=first, patient=True)
        try:
            return await query_status(workflow)
        except RPCError as error:
            if query_timed_out(error):
                raise QueryUnanswered from None
            raise

    return read


def _ignore(_: object) -> None:
    return None


async def follow_until_settled(
    probe: CaseProbe,
    *,
    wait_seconds: float,
    poll_seconds: float,
    report_every: float = REPORT_EVERY_SECONDS,
    on_progress: Callable[[CaseView], None] = _ignore,
    on_waiting: Callable[[Waiting], None] = _ignore,
    done: Callable[[CaseView], bool] | None = None,
    leave_without_worker: bool = True,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> CaseView:
    """Poll until the case waits for a reviewer or for the customer's answer (its record written), or
    ends (its result); with
    ``done``, until a view answers that ``done`` accepts (``lambda view: True``: the first answer).

    An unanswered status query is asked again while a worker is there; when none is
    (:func:`worker_presence`), ``worker_unavailable`` at once (unless ``leave_without_worker`` is
    False: a test that restarts its worker waits for the next one). Every ``report_every`` seconds
    ``on_waiting`` is told what the case is doing; at ``wait_seconds`` the wait ends with
    :func:`gave_up` (busy worker, commerce outage or a case still working)."""
    now = clock or asyncio.get_running_loop().time
    started = now()
    deadline, next_report = started + wait_seconds, started + report_every
    first, unanswered_since = True, None
    while True:
        asked = now()
        try:
            view = await probe.read(first)
        except QueryUnanswered:
            unanswered_since = asked if unanswered_since is None else unanswered_since
            if leave_without_worker:
                work = await probe.work()
                pollers = await probe.pollers(work)
                if worker_presence(pollers, work) is WorkerPresence.ABSENT:
                    raise worker_unavailable(probe.case_id, pollers, work, probe.start_hint) from None
        else:
            first, unanswered_since = False, None
            if done is not None:
                if done(view):
                    return view
            elif view.status in TERMINAL_STATUSES:
                # Ended, but the workflow may still be writing its record: its result is the last word.
                return await probe.ended(max(deadline - now(), 1.0))
            elif _settled_for_now(view):
                return view
            on_progress(view)
        current = now()
        if current >= deadline or current >= next_report:
            waiting = await _where(probe, started, current, unanswered_since)
            if current >= deadline:
                raise gave_up(waiting)
            on_waiting(waiting)
            next_report = current + report_every
        await sleep(poll_seconds)


def _settled_for_now(view: CaseView) -> bool:
    """A reviewer's turn (the proposal waits) or the customer's (the service asked something), once the
    case's record of it is written."""
    return view.status in SETTLED_FOR_NOW and view.record_attempted


async def _where(probe: CaseProbe, started: float, now: float, unanswered_since: float | None) -> Waiting:
    work = await probe.work()
    busy = unanswered_since is not None
    return Waiting(
        case_id=probe.case_id,
        waited_seconds=now - started,
        work=work,
        unanswered_seconds=now - unanswered_since if unanswered_since is not None else None,
        pollers=await probe.pollers(work) if busy else None,
    )


class CaseClosed(Exception):
    """The ``reply`` update found the case's workflow closed: its transcript has the last word."""


def reply_in(view: ConversationView, turn: int) -> TurnReply:
    """What a closed case answers for message ``turn``: its first service entry for that message, from
    the transcript (``progress_offset`` 0: a reader of a closed case's stream reads it to its end)."""
    entry = next((e for e in view.entries if e.speaker is Speaker.SERVICE and e.turn == turn), None)
    return TurnReply(case_id=view.case_id, turn=turn, status=view.status, reply=entry, progress_offset=0)


async def follow_reply(
    case_id: str,
    turn: int,
    ask: Callable[[float], Awaitable[TurnReply]],
    transcript: Callable[[], Awaitable[ConversationView]],
    *,
    wait_seconds: float,
    grace: float = UNANSWERED_GRACE_SECONDS,
    clock: Callable[[], float] | None = None,
) -> TurnReply:
    """The reply to message ``turn`` of case ``case_id``: ``ask(seconds)`` (the ``reply`` update, which
    waits in the case up to :data:`~contracts.conversation.MAX_REPLY_WAIT_SECONDS`) is asked again
    until the reply exists or the case has ended; ``ask`` raising :class:`CaseClosed` is answered from
    ``transcript()`` (:func:`reply_in`). After ``wait_seconds`` without either: ``case_still_working``
    (the case goes on; the message was taken); an ask no worker takes up within ``grace`` seconds of
    its wait is asked again, and at the deadline ends the wait with ``worker_busy``. A case that settled
    for now (it waits for a reviewer or for the customer) without a reply to this message is returned
    as it is."""
    now = clock or asyncio.get_running_loop().time
    deadline = now() + wait_seconds
    while True:
        asked = min(max(deadline - now(), 0.0), float(MAX_REPLY_WAIT_SECONDS))
        try:
            answer = await asyncio.wait_for(ask(asked), asked + grace)
        except CaseClosed:
            return reply_in(await transcript(), turn)
        except TimeoutError:  # no worker has taken the update up: busy, or gone
            if now() < deadline:
                continue
            raise TransientError(
                WaitCode.WORKER_BUSY,
                f"case {case_id}: no worker took up the wait for the reply to message {turn} within "
                f"{seconds_text(asked + grace)}; your message was taken and the case goes on",
            ) from None
        if answer.reply is not None or answer.status in TERMINAL_STATUSES:
            return answer
        if now() >= deadline:
            if answer.status in SETTLED_FOR_NOW:
                return answer
            raise TransientError(
                WaitCode.CASE_WORKING,
                f"case {case_id}: no reply to message {turn} yet after {seconds_text(wait_seconds)} "
                f"(status {answer.status.value}); your message was taken and the case goes on",
            )
