"""The typed case client: start a case, open one, read, wait, review and list (no printing here).

Every name that crosses to the workflow (its type, the ``status``/``proposal``/``events``/``budgets``
queries, the ``review`` signal and update) comes from :mod:`contracts.names`; no workflow code is
imported on this side.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from case_client import _conversation, _following, _reading, _reviewing
from case_client._codes import ClientErrorCode
from case_client._connection import RPC_TIMEOUT, TemporalTarget, connect, live_pollers, require_worker
from case_client._conversation import Progress, new_message_id
from case_client._following import CaseProbe, Waiting
from case_client._pollers import QueuePollers, describe_pollers
from case_client._progress import CaseWork, case_work
from case_client._rules import (
    CASE_NOT_ACCESSIBLE,
    DEFAULT_APPROVAL_TTL_SECONDS,
    CaseSummary,
    case_id_for,
    check_question,
    listed_for,
    listing_query,
    new_case,
    normalised_question,
    retry_case_ids,
    start_search_attributes,
    static_details,
    static_summary,
    summary_of,
)
from contracts import search_attributes as sa
from contracts.case import Budgets, CaseEvent, CaseStatus, CaseView, ReviewDecision, ReviewOutcome
from contracts.case_input import CaseInput
from contracts.conversation import ConversationView, CustomerMessage, MessageAccepted, TurnReply
from contracts.credentials import SignedReview
from contracts.effect_card import ProposalForReview
from contracts.errors import AuthorizationError, BusinessError, TransientError
from contracts.identity import Identity
from contracts.knowledge import Language
from contracts.names import WORKFLOW_NAME, QueryName, case_id_of, workflow_id

LISTING_LIMIT = 200
ApplicantIssuer = Callable[[Identity, str], str]
"""Signs an applicant token for (applicant, case id): the login service's part of starting a case."""


def _ignore(_: object) -> None:
    return None


class CaseHandle:
    """One case (its latest run, following continue-as-new).

    ``status``, ``proposal``, ``events``, ``budgets``, ``wait_for`` and ``settled`` without a viewer
    read the workflow's queries as they are: for trusted callers (tests, scripts, benchmarks) that
    hold the Temporal client anyway. ``read`` and ``settled(viewer=...)`` read for a person: only a
    case that person may see, and a missing worker is said at once instead of a query timeout.
    """

    def __init__(self, client: Client, workflow: WorkflowHandle, *, existing_since: datetime | None = None) -> None:
        self._client = client
        self.workflow = workflow
        """The Temporal handle, for what the case client does not wrap (history, describe, raw payloads)."""
        self.case_id = case_id_of(workflow.id)
        self.existing_since = existing_since
        """When the case was first started, if the start that returned this handle found it already there
        (its request key, or the same question asked again within the retry window); None if it started it."""

    async def status(self) -> CaseView:
        """The ``status`` query: the case as the workflow sees it now."""
        return await _reading.query_status(self.workflow)

    async def proposal(self) -> ProposalForReview | None:
        """The ``proposal`` query: the refund waiting for a reviewer, its digest and computed effect."""
        return await self.workflow.query(QueryName.PROPOSAL, result_type=ProposalForReview | None)  # type: ignore[arg-type]

    async def events(self) -> list[CaseEvent]:
        """The ``events`` query: what happened, refusals included, with reasons."""
        return await self.workflow.query(QueryName.EVENTS, result_type=list[CaseEvent])

    async def budgets(self) -> Budgets:
        """The ``budgets`` query: model, tool and turn counters with their limits."""
        return await self.workflow.query(QueryName.BUDGETS, result_type=Budgets)

    async def listed(self, viewer: Identity) -> CaseSummary:
        """The case as Temporal's visibility lists it (search attributes, no worker needed), if
        ``viewer`` may list it; another tenant's case reads like a missing one."""
        try:
            description = await self.workflow.describe(rpc_timeout=RPC_TIMEOUT)
        except RPCError as error:
            if error.status is RPCStatusCode.NOT_FOUND:
                raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE) from None
            raise TransientError(
                ClientErrorCode.TEMPORAL_UNAVAILABLE, f"cannot describe {self.workflow.id}: {error.message}"
            ) from None
        tenant = description.typed_search_attributes.get(sa.TENANT)
        if tenant != viewer.tenant or not await listed_for(description, viewer):
            raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE)
        return summary_of(description)

    async def question(self) -> str:
        """The question the case was started with, from its first history event (no worker needed)."""
        return await _reading.started_question(self._client, self.workflow)

    async def read(self, viewer: Identity, *, start_hint: str, check_worker: bool = True) -> CaseView:
        """The case for ``viewer``: see :func:`case_client._reading.read_case`."""
        return await _reading.read_case(
            self._client, self.case_id, viewer, start_hint=start_hint, check_worker=check_worker
        )

    async def wait_for(
        self, done: Callable[[CaseView], bool], *, timeout: float = 60, poll_seconds: float = 0.2
    ) -> CaseView:
        """Poll the status query until ``done(view)``; ``wait_timeout`` after ``timeout`` seconds."""
        return await _reading.wait_for(self.workflow, done, wait_seconds=timeout, poll_seconds=poll_seconds)

    async def settled(
        self,
        *,
        timeout: float = 60,
        viewer: Identity | None = None,
        start_hint: str = "",
        poll_seconds: float = 0.5,
        on_progress: Callable[[CaseView], None] = _ignore,
        on_waiting: Callable[[Waiting], None] = _ignore,
    ) -> CaseView:
        """Wait until the case waits for a reviewer (its record written) or has ended (its result).

        With ``viewer`` every read is for that person (the worker is checked once; after that a query
        that goes unanswered is asked again while a worker polls, and ``worker_unavailable`` once none
        does); ``on_waiting`` hears every 30 s what the case is doing. At ``timeout`` the wait ends
        with what the case is doing (:class:`case_client._following.WaitCode`). See
        :func:`case_client._following.follow_until_settled`.
        """
        return await _following.follow_until_settled(
            self._probe(viewer, start_hint),
            wait_seconds=timeout,
            poll_seconds=poll_seconds,
            on_progress=on_progress,
            on_waiting=on_waiting,
            leave_without_worker=viewer is not None,
        )

    async def read_patiently(
        self,
        viewer: Identity,
        *,
        start_hint: str,
        patience: float,
        on_waiting: Callable[[Waiting], None] = _ignore,
    ) -> CaseView:
        """:meth:`read`, but a status query that a busy worker leaves unanswered is asked again for up to
        ``patience`` seconds (``worker_busy`` then, naming what the case is doing); a worker that is
        gone is ``worker_unavailable`` at once."""
        return await _following.follow_until_settled(
            self._probe(viewer, start_hint),
            wait_seconds=patience,
            poll_seconds=0.5,
            on_waiting=on_waiting,
            done=lambda _view: True,
        )

    async def work(self) -> CaseWork:
        """What the case is doing now (its pending steps), from Temporal's description: no worker needed."""
        try:
            description = await self.workflow.describe(rpc_timeout=RPC_TIMEOUT)
        except RPCError as error:
            raise TransientError(
                ClientErrorCode.TEMPORAL_UNAVAILABLE, f"cannot describe {self.workflow.id}: {error.message}"
            ) from None
        return case_work(description.raw_description, now=time.time())

    async def pollers(self, work: CaseWork) -> QueuePollers:
        """Who polls the task queue of the case (``work``'s), and how recently."""
        return await describe_pollers(self._client, work.task_queue)

    def _probe(self, viewer: Identity | None, start_hint: str) -> CaseProbe:
        return CaseProbe(
            case_id=self.case_id,
            read=_following.status_reader(self._client, self.workflow, viewer, start_hint),
            ended=lambda seconds: self.ended(timeout=seconds),
            work=self.work,
            pollers=self.pollers,
            start_hint=start_hint,
        )

    async def ended(self, *, timeout: float) -> CaseView:
        """The case's final view, once its workflow (following continue-as-new) has finished."""
        return await _reading.wait_until_ended(self.workflow, self.case_id, wait_seconds=timeout)

    async def say(
        self, text: str, *, token: str, message_id: str | None = None, language: Language = Language.EN
    ) -> MessageAccepted:
        """A further message under ``token`` (the customer's credential for this case): its acceptance, or
        :class:`~case_client.MessageRefused` with the sentence in ``language``; an id sent again is taken once."""
        message = CustomerMessage(text=text, token=token, message_id=message_id or new_message_id())
        return await _conversation.send_message(self.workflow, message, language=language)

    async def reply(self, turn: int, wait_seconds: float = 10.0) -> TurnReply:
        """The reply to message ``turn`` once it exists, or after ``wait_seconds`` (at most 30) the case as
        it is; :class:`~case_client.CaseClosed` once the case's workflow has closed."""
        return await _conversation.reply_unless_closed(self.workflow, turn, wait_seconds=wait_seconds)

    async def reply_within(self, turn: int, *, timeout: float) -> TurnReply:
        """:meth:`reply` until the reply exists or the case ends: :func:`case_client._following.follow_reply`."""
        ask = functools.partial(self.reply, turn)
        return await _following.follow_reply(self.case_id, turn, ask, self.conversation, wait_seconds=timeout)

    async def conversation(self) -> ConversationView:
        """The ``conversation`` query: the transcript, the case's status and when it closes if idle."""
        return await _conversation.conversation(self.workflow)

    def progress(self, from_offset: int = 0) -> AsyncIterator[Progress]:
        """The case's progress stream from ``from_offset`` on, following continue-as-new, until it ends."""
        return _conversation.progress(self._client, self.workflow.id, from_offset=from_offset)

    async def progress_offset(self) -> int:
        """The progress stream's length now (read on from here to see only what comes next)."""
        return await _conversation.progress_offset(self._client, self.workflow.id)

    async def review(self, decision: ReviewDecision | SignedReview) -> ReviewOutcome:
        """Approve or reject by the ``review`` update: the accepted outcome, or a typed refusal."""
        return await _reviewing.review_by_update(self.workflow, self.case_id, decision)

    async def signal_review(self, decision: ReviewDecision | SignedReview) -> None:
        """Approve or reject by the ``review`` signal (fire and forget; the outcome is in the events)."""
        await _reviewing.review_by_signal(self.workflow, decision)


class CaseClient:
    """Cases on one Temporal target: start, open, list, and check that a worker polls the queue."""

    def __init__(self, client: Client, target: TemporalTarget, *, issuer: ApplicantIssuer | None = None) -> None:
        """``issuer`` signs the applicant token of each case :meth:`start` starts (the login service's
        part); without one, cases start without a token and a worker refuses to read anything for them."""
        self.temporal = client
        self.target = target
        self.issuer = issuer

    @classmethod
    async def connect(
        cls, target: TemporalTarget | None = None, *, issuer: ApplicantIssuer | None = None
    ) -> CaseClient:
        """Connect through Temporal's environment configuration (:meth:`TemporalTarget.from_env`)."""
        target = target or TemporalTarget.from_env()
        return cls(await connect(target), target, issuer=issuer)

    @classmethod
    def for_client(cls, client: Client, *, task_queue: str, issuer: ApplicantIssuer | None = None) -> CaseClient:
        """Cases on an already connected client (it must use :data:`contracts.payload_codec.CASE_DATA_CONVERTER`)."""
        target = TemporalTarget(
            address=client.service_client.config.target_host, namespace=client.namespace, task_queue=task_queue
        )
        return cls(client, target, issuer=issuer)

    @property
    def task_queue(self) -> str:
        return self.target.task_queue

    async def workers_polling(self) -> bool:
        """Whether a worker polls the case task queue now (asked once, no grace period)."""
        return await live_pollers(self.temporal, self.task_queue) > 0

    async def require_worker(self, *, start_hint: str) -> None:
        """``worker_unavailable`` (one line, ending with ``start_hint``) when nobody polls the queue."""
        await require_worker(self.temporal, self.task_queue, start_hint=start_hint)

    async def start(
        self,
        applicant: Identity,
        question: str,
        *,
        language: Language | None = None,
        ttl_seconds: int = DEFAULT_APPROVAL_TTL_SECONDS,
        request_key: str | None = None,
        case_id: str | None = None,
    ) -> CaseHandle:
        """Start a case (see :func:`case_client.new_case` for the checks and the case id)."""
        case = new_case(
            applicant,
            question,
            language=language,
            ttl_seconds=ttl_seconds,
            request_key=request_key,
            case_id=case_id,
        )
        if self.issuer is not None:
            case = case.model_copy(update={"applicant_token": self.issuer(applicant, case.case_id)})
        return await self.start_case(case, request_key=request_key)

    async def converse(
        self,
        applicant: Identity,
        text: str,
        *,
        language: Language | None = None,
        case_id: str | None = None,
        wait_seconds: float = 10.0,
    ) -> tuple[CaseHandle, TurnReply]:
        """Start a conversation with Update-with-Start: ``text`` is the case's question (:func:`new_case`),
        under a token from :attr:`issuer`; its reply if it came within ``wait_seconds`` (at most 30)."""
        case = new_case(applicant, text, language=language, case_id=case_id)
        if self.issuer is not None:
            case = case.model_copy(update={"applicant_token": self.issuer(applicant, case.case_id)})
        _, reply = await _conversation.start_conversation(
            self.temporal, self.task_queue, case, wait_seconds=wait_seconds
        )
        return self.open(case.case_id), reply

    async def start_case(self, case: CaseInput, *, request_key: str | None = None) -> CaseHandle:
        """Start ``case``; a case id that is taken is never run twice: the case with that id is returned
        (its handle's ``existing_since`` set) if it is running or completed, else ``case_closed``. With
        ``request_key``, a case of another question under that key is ``request_key_reused``, before
        anything is waited for."""
        try:
            workflow = await self.temporal.start_workflow(
                WORKFLOW_NAME,
                case,
                id=workflow_id(case.case_id),
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                memo={"applicant": case.applicant.subject, "fictional": True},
                search_attributes=start_search_attributes(case),
                static_summary=static_summary(case),
                static_details=static_details(case),
                result_type=CaseView,
            )
            return CaseHandle(self.temporal, workflow)
        except WorkflowAlreadyStartedError:
            pass
        existing = await self.recent_case(case.case_id)
        if existing is None:  # gone between the start and the look: a retention race, not a reuse
            raise TransientError(
                ClientErrorCode.CASE_NOT_FOUND, f"case {case.case_id} is taken but cannot be described; try again"
            )
        if request_key is not None and await self._question_differs(existing, case.question):
            raise BusinessError(
                ClientErrorCode.REQUEST_KEY_REUSED, f"request key {request_key!r} was already used for another question"
            )
        return existing

    async def _question_differs(self, case: CaseHandle, question: str) -> bool:
        asked = await _reading.started_question(self.temporal, case.workflow)
        return normalised_question(asked) != normalised_question(question)

    async def retry_case(
        self, applicant: Identity, question: str, *, window_seconds: float, now: float
    ) -> tuple[str, CaseHandle | None]:
        """For ``ask`` without a request key: the id a new case of ``question`` takes, and the case the
        same applicant started with the same question less than ``window_seconds`` ago, if any (see
        :func:`case_client._rules.retry_case_ids`). A window of 0 gives a random id and no case."""
        if window_seconds <= 0:
            return case_id_for(None, applicant), None
        ids = retry_case_ids(
            applicant, check_question(question), task_queue=self.task_queue, now=now, window_seconds=window_seconds
        )
        return ids.current, await self.recent_case(ids.previous, within_seconds=window_seconds)

    async def recent_case(self, case_id: str, *, within_seconds: float | None = None) -> CaseHandle | None:
        """The case ``case_id`` if it exists (and, with ``within_seconds``, was first started less than that
        many seconds ago), its handle's ``existing_since`` set; ``case_closed`` if it ended otherwise than
        by completing (terminated, timed out, ...): a taken id never runs again."""
        first_started, status = await _reading.first_start(self.temporal, case_id)
        if first_started is None:
            return None
        if within_seconds is not None and (datetime.now(UTC) - first_started).total_seconds() >= within_seconds:
            return None
        if status not in (None, WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.COMPLETED):
            raise BusinessError(
                ClientErrorCode.CASE_CLOSED,
                f"case {case_id} (the same request) ended as {status.name}; to ask again, pass a new --request-key",
            )
        return CaseHandle(self.temporal, _reading.workflow_handle(self.temporal, case_id), existing_since=first_started)

    def open(self, case_id: str) -> CaseHandle:
        """A case by its id (``case-`` prefix optional); nothing is read until a method asks."""
        return CaseHandle(self.temporal, _reading.workflow_handle(self.temporal, case_id))

    async def list_cases(self, viewer: Identity, status: CaseStatus | None = None) -> AsyncIterator[CaseSummary]:
        """The cases ``viewer`` may see (:func:`case_client.listing_query`): a reviewer all of their
        tenant's, a customer their own."""
        async for execution in self.temporal.list_workflows(listing_query(viewer, status), limit=LISTING_LIMIT):
            if not await listed_for(execution, viewer):
                continue
            yield summary_of(execution)
