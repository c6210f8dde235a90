"""Fast workflow tests: the real ``SupportCaseWorkflow``, every activity a scripted mock registered by name.

The end-to-end tests run the production worker (rehearsal model, real commerce server) and cannot
reach the branches that need a misbehaving provider, a commerce server that keeps failing, a record
store that refuses writes or a flood of refused reviews. The cases are driven only through the
workflow's public face: start, the ``review`` signal and update, the ``status`` and ``events`` queries
and the resulting :class:`CaseView`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from activities.case.run_origin import confirm_continued_run
from contracts.case import Budgets, CaseEvent, CaseRecord, CaseStatus, CaseView, Decision, ReviewOutcome, SettleRequest
from contracts.case_input import CaseInput, CaseOptions
from contracts.commerce import RefundReceipt, canonical_json
from contracts.conversation import Speaker
from contracts.credentials import ApplicantCheck, CaseDirectoryRequest, VerifiedApplicant, verify_applicant_token
from contracts.directory import Directory
from contracts.errors import (
    AuthorizationError,
    BusinessError,
    ConfigurationError,
    ContractError,
    SupportError,
    TransientError,
    WireCode,
    to_application_error,
)
from contracts.knowledge import Language
from contracts.model_io import (
    ComposedAnswer,
    ComposeRequest,
    ComposeResult,
    Intent,
    InvestigateRequest,
    InvestigateResult,
    ModelCallMeta,
    NextAction,
    Plan,
    PlanRequest,
    PlanResult,
    ProposedToolCall,
    ReviewRequest,
    ReviewResult,
    ReviewVerdict,
    ToolObservation,
    ToolRequest,
    Verdict,
)
from contracts.names import (
    REVIEW,
    WORKFLOW_NAME,
    ActivityName,
    EventKind,
    QueryName,
    ReviewRefusal,
    StopCode,
    stop_reason,
)
from keystore import demo_identity, directory_location, load_directory
from tests.case_data import passage, refund_quote
from tests.credentials_support import applicant_token, signed_review, use_test_keys
from workflows.activity_options import RECORD, SETTLE
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

QUESTION = "Please refund QH-1001 and explain the amount and the policy"
FAST_RETRY_SECONDS = 0.05
"""The Retry-After hint on every transient failure here (the server here fires a retry that soon)."""
GUARD_SECONDS = 60
"""How long a test waits for a case before it fails (a guard against hanging, never a timing check)."""

# --- fictional facts the mocks answer with -------------------------------------------------------

PASSAGES = [
    passage(f"RETURNS:{page}:en:0", title=title, text=text)
    for page, title, text in [
        ("p02", "Refund window", "Items may be returned within 30 days of delivery."),
        ("p03", "Refund amount", "The refund covers the paid item amount; the delivery charge is not refunded."),
    ]
]
QUOTE = refund_quote(ledger_id="ledger-branches")
PLAN = Plan(intent=Intent.REFUND, order_id="QH-1001", action_requested=True, queries=[], milestones=[])
DRAFT = ComposedAnswer(
    answer="A refund of CNY 129.00 (12900 cents) for QH-1001 can be proposed under the return policy; "
    "a reviewer must approve it before any money moves.",
    citations=[passage.passage_id for passage in PASSAGES],
    next_action=NextAction.PROPOSE_REFUND,
)


def meta(attempt: int) -> ModelCallMeta:
    return ModelCallMeta(provider="mock", model="scripted", attempt=attempt)


def tool_call(call_id: str, name: str, **arguments: str) -> ProposedToolCall:
    return ProposedToolCall(call_id=call_id, name=name, arguments=arguments, raw_arguments=canonical_json(arguments))


def transient(code: str, message: str) -> TransientError:
    """A transient failure that Temporal retries soon.

    Retries are real: a transient failure is retried by Temporal under the policy the workflow chose
    (:mod:`workflows.activity_options`), with backoffs of 1 s, 2 s, 4 s ... (SETTLE's ten attempts would
    take about 151 s). The mocks' transient errors therefore carry the ``retry_after_seconds`` hint that
    a provider's Retry-After header gives in production, which ``to_application_error`` turns into
    ``next_retry_delay``; the number of attempts is unchanged. The server here fires each retry when
    that hint says (a dev server as it ships waits about a second before every retry; why and how that
    is changed: ``tests/workflows/conftest.py``), so the tests that spend retries, the model budget
    (10), the record (4) and the settlement whose ten attempts are all spent (9), take about a second
    each.
    """
    return TransientError(WireCode(code), message, retry_after_seconds=FAST_RETRY_SECONDS)


# --- default behaviours: a case that reaches waiting_approval and settles ------------------------
# A behaviour takes the activity's request and the attempt number; it returns the result or raises
# a SupportError, which the mock turns into the ApplicationError the production boundary would raise.

Behaviour = Callable[[Any, int], Any]


def plan_refund(request: PlanRequest, attempt: int) -> PlanResult:
    return PlanResult(plan=PLAN, meta=meta(attempt))


def quote_then_stop(request: InvestigateRequest, attempt: int) -> InvestigateResult:
    calls = [tool_call("call-quote", "calculate_refund", order_id="QH-1001")] if request.turn == 1 else []
    return InvestigateResult(
        calls=calls, content=None, finish_reason="tool_calls" if calls else "stop", meta=meta(attempt)
    )


def answer_tools(request: ToolRequest, attempt: int) -> ToolObservation:
    if request.name == "calculate_refund":
        result = {
            "quote": QUOTE.model_dump(mode="json"),
            "passages": [passage.model_dump(mode="json") for passage in PASSAGES],
        }
    else:
        result = {"passages": []}
    return ToolObservation(call_id=request.call_id, name=request.name, ok=True, result=result)


def draft_refund(request: ComposeRequest, attempt: int) -> ComposeResult:
    return ComposeResult(answer=DRAFT, meta=meta(attempt))


def pass_review(request: ReviewRequest, attempt: int) -> ReviewResult:
    return ReviewResult(verdict=ReviewVerdict(verdict=Verdict.PASS, problems=[]), meta=meta(attempt))


def pay(request: SettleRequest, attempt: int) -> RefundReceipt:
    proposal = request.proposal
    return RefundReceipt(
        receipt_id=f"SIM-{request.digest[:12]}",
        approval_id=request.approval_id,
        order_id=proposal.order_id,
        amount_cents=proposal.amount_cents,
        currency=proposal.currency,
        digest=request.digest,
        order_version_after=proposal.order_version + 1,
        created_at=request.approved_at,
    )


def write_record(record: CaseRecord, attempt: int) -> str:
    return f"/records/{record.case.case_id}-{record.case.status.value}.json"


def verify_applicant(check: ApplicantCheck, attempt: int) -> VerifiedApplicant:
    """The production check, with the test keys: a missing or invalid token is refused (authorization)."""
    if not check.applicant_token:
        raise AuthorizationError(WireCode("applicant_token_missing"), "The case carries no applicant token.")
    directory = load_directory(directory_location(use_test_keys().state_dir, {}))
    identity = verify_applicant_token(check.applicant_token, directory, case_id=check.case_id, now=datetime.now(UTC))
    return VerifiedApplicant(identity=identity, directory=directory.for_case(identity.subject))


def read_case_directory(request: CaseDirectoryRequest, attempt: int) -> Directory:
    """The production read, with the test keys: the applicant's slice of the directory as it is now."""
    return load_directory(directory_location(use_test_keys().state_dir, {})).for_case(request.applicant)


DEFAULTS: dict[ActivityName, Behaviour] = {
    ActivityName.VERIFY_APPLICANT: verify_applicant,
    ActivityName.READ_CASE_DIRECTORY: read_case_directory,
    ActivityName.PLAN_CASE: plan_refund,
    ActivityName.INVESTIGATE_TURN: quote_then_stop,
    ActivityName.COMPOSE_ANSWER: draft_refund,
    ActivityName.REVIEW_ANSWER: pass_review,
    ActivityName.RUN_INVESTIGATION_TOOL: answer_tools,
    ActivityName.EXECUTE_REFUND: pay,
    ActivityName.WRITE_CASE_RECORD: write_record,
}


class MockActivities:
    """Every activity of the workflow, by name, answering from ``behaviours`` and counting attempts.

    The mocks are registered under the names in :class:`contracts.names.ActivityName`, as in
    temporalio/samples-python ``tests/hello/hello_activity_test.py``. A mock answers with the contract's
    result types or fails as the production boundary does (:mod:`activities.runtime.boundary`): a
    :class:`SupportError` through :func:`contracts.errors.to_application_error` with the attempt number.
    As in production, a case starts with an applicant token signed by the test issuer key, the
    ``verify_applicant`` mock checks it for real (:func:`contracts.credentials.verify_applicant_token`
    with the test public keys), and only a reviewer's own signed approval decides
    (:mod:`tests.credentials_support`).
    """

    def __init__(self, behaviours: dict[ActivityName, Behaviour] | None = None) -> None:
        self.behaviours = DEFAULTS | (behaviours or {})
        self.attempts: Counter[ActivityName] = Counter()
        self.requests: dict[ActivityName, list[Any]] = defaultdict(list)

    def _answer(self, name: ActivityName, request: Any) -> Any:
        attempt = activity.info().attempt
        self.attempts[name] += 1
        self.requests[name].append(request)
        try:
            return self.behaviours[name](request, attempt)
        except SupportError as error:
            raise to_application_error(error, attempt=attempt) from None

    @activity.defn(name=ActivityName.VERIFY_APPLICANT.value)
    async def verify_applicant(self, check: ApplicantCheck) -> VerifiedApplicant:
        return self._answer(ActivityName.VERIFY_APPLICANT, check)

    @activity.defn(name=ActivityName.READ_CASE_DIRECTORY.value)
    async def read_case_directory(self, request: CaseDirectoryRequest) -> Directory:
        return self._answer(ActivityName.READ_CASE_DIRECTORY, request)

    @activity.defn(name=ActivityName.PLAN_CASE.value)
    async def plan_case(self, request: PlanRequest) -> PlanResult:
        return self._answer(ActivityName.PLAN_CASE, request)

    @activity.defn(name=ActivityName.INVESTIGATE_TURN.value)
    async def investigate_turn(self, request: InvestigateRequest) -> InvestigateResult:
        return self._answer(ActivityName.INVESTIGATE_TURN, request)

    @activity.defn(name=ActivityName.COMPOSE_ANSWER.value)
    async def compose_answer(self, request: ComposeRequest) -> ComposeResult:
        return self._answer(ActivityName.COMPOSE_ANSWER, request)

    @activity.defn(name=ActivityName.REVIEW_ANSWER.value)
    async def review_answer(self, request: ReviewRequest) -> ReviewResult:
        return self._answer(ActivityName.REVIEW_ANSWER, request)

    @activity.defn(name=ActivityName.RUN_INVESTIGATION_TOOL.value)
    async def run_investigation_tool(self, request: ToolRequest) -> ToolObservation:
        return self._answer(ActivityName.RUN_INVESTIGATION_TOOL, request)

    @activity.defn(name=ActivityName.EXECUTE_REFUND.value)
    async def execute_refund(self, request: SettleRequest) -> RefundReceipt:
        return self._answer(ActivityName.EXECUTE_REFUND, request)

    @activity.defn(name=ActivityName.WRITE_CASE_RECORD.value)
    async def write_case_record(self, record: CaseRecord) -> str:
        return self._answer(ActivityName.WRITE_CASE_RECORD, record)

    def all(self) -> list[Callable[..., Awaitable[Any]]]:
        return [
            self.verify_applicant,
            self.read_case_directory,
            confirm_continued_run,  # the production activity: it asks the test's own dev server
            self.plan_case,
            self.investigate_turn,
            self.compose_answer,
            self.review_answer,
            self.run_investigation_tool,
            self.execute_refund,
            self.write_case_record,
        ]

    def model_attempts(self) -> int:
        return sum(
            self.attempts[name]
            for name in (
                ActivityName.PLAN_CASE,
                ActivityName.INVESTIGATE_TURN,
                ActivityName.COMPOSE_ANSWER,
                ActivityName.REVIEW_ANSWER,
            )
        )


# --- driving a case ------------------------------------------------------------------------------


class Case:
    """One case on its own task queue, served by a worker in this process with ``mocks``.

    The worker runs against the package's own dev server (``tests/workflows/conftest.py``), one task
    queue per test.
    """

    def __init__(self, client: Client, task_queue: str, mocks: MockActivities) -> None:
        self.client = client
        self.task_queue = task_queue
        self.mocks = mocks
        self.handle: WorkflowHandle | None = None

    async def start(self, question: str = QUESTION, *, ttl: int = 300) -> WorkflowHandle:
        """Start alice's case with her applicant token, signed for this case by the test issuer."""
        case_id = uuid.uuid4().hex[:12]
        return await self.start_input(
            CaseInput(
                case_id=case_id,
                question=question,
                language=Language.EN,
                applicant=demo_identity("alice"),
                options=CaseOptions(approval_ttl_seconds=ttl),
                applicant_token=applicant_token(demo_identity("alice"), case_id),
            )
        )

    async def start_input(self, case: CaseInput) -> WorkflowHandle:
        self.handle = await self.client.start_workflow(
            WORKFLOW_NAME, case, id=f"case-{case.case_id}", task_queue=self.task_queue, result_type=CaseView
        )
        return self.handle

    async def view(self) -> CaseView:
        assert self.handle is not None
        return await self.handle.query(QueryName.STATUS.value, result_type=CaseView)

    async def events(self) -> list[CaseEvent]:
        """The events of the case's latest run (a flood may have continued it as new)."""
        assert self.handle is not None
        latest = self.client.get_workflow_handle(self.handle.id)
        return await latest.query(QueryName.EVENTS.value, result_type=list[CaseEvent])

    async def waiting_for_approval(self) -> CaseView:
        """The view once the case waits for a reviewer and its record was written or failed."""
        deadline = asyncio.get_running_loop().time() + GUARD_SECONDS
        while True:
            view = await self.view()
            if view.status is CaseStatus.WAITING_APPROVAL and view.record_attempted:
                return view
            assert view.status in (CaseStatus.RUNNING, CaseStatus.WAITING_APPROVAL), (view.status, view.reason)
            assert asyncio.get_running_loop().time() < deadline, f"case still {view.status}/{view.phase}"
            await asyncio.sleep(0.05)

    @property
    def case_id(self) -> str:
        assert self.handle is not None
        return self.handle.id.removeprefix("case-")

    async def approve(self, digest: str) -> ReviewOutcome:
        assert self.handle is not None
        decision = signed_review("chen", self.case_id, digest, Decision.APPROVE)
        return await self.handle.execute_update(REVIEW, decision, result_type=ReviewOutcome)

    async def result(self) -> CaseView:
        assert self.handle is not None
        return await asyncio.wait_for(self.handle.result(), GUARD_SECONDS)

    async def approved_result(self) -> CaseView:
        """Wait for the proposal, approve it as chen (signed) with its digest, and return the final view."""
        waiting = await self.waiting_for_approval()
        assert waiting.digest is not None
        outcome = await self.approve(waiting.digest)
        assert outcome.accepted, outcome
        return await self.result()


@asynccontextmanager
async def mocked_case(client: Client, behaviours: dict[ActivityName, Behaviour] | None = None) -> AsyncIterator[Case]:
    mocks = MockActivities(behaviours)
    task_queue = f"branches-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportCaseWorkflow],
        activities=mocks.all(),
        workflow_runner=workflow_runner(),  # the production sandbox (signatures are checked in the workflow)
    ):
        yield Case(client, task_queue, mocks)


def kinds(events: list[CaseEvent]) -> list[str]:
    return [event.kind for event in events]


def lifecycle(events: list[CaseEvent]) -> list[str]:
    """The kinds without the replies to the customer (the transcript holds those; tests/e2e read it)."""
    return [kind for kind in kinds(events) if kind != EventKind.REPLY_SENT]


def details(events: list[CaseEvent], kind: EventKind) -> list[str]:
    return [event.detail for event in events if event.kind == kind]


# --- the applicant's credential ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token_for", "code"),
    [
        pytest.param(None, "applicant_token_missing", id="no-token"),
        pytest.param("another-case", "token_for_another_case", id="token-for-another-case"),
        pytest.param("forged", "bad_signature", id="forged-token"),
    ],
)
async def test_a_case_without_a_valid_applicant_token_reads_nothing_and_fails(
    temporal_client: Client, token_for: str | None, code: str
) -> None:
    case_id = uuid.uuid4().hex[:12]
    token = None
    if token_for == "another-case":
        token = applicant_token(demo_identity("alice"), uuid.uuid4().hex[:12])
    elif token_for == "forged":  # alice's token with its signature replaced by another token's
        header_and_claims = applicant_token(demo_identity("alice"), case_id).rsplit(".", 1)[0]
        token = f"{header_and_claims}.{applicant_token(demo_identity('alice'), 'other-' + case_id).rsplit('.', 1)[1]}"
    case_input = CaseInput(
        case_id=case_id,
        question=QUESTION,
        language=Language.EN,
        applicant=demo_identity("alice"),
        applicant_token=token,
    )
    async with mocked_case(temporal_client) as case:
        await case.start_input(case_input)
        final = await case.result()
        events = await case.events()

    assert (final.status, final.reason) == (CaseStatus.FAILED, stop_reason(StopCode.APPLICANT_UNVERIFIED, code))
    assert case.mocks.attempts[ActivityName.VERIFY_APPLICANT] == 1  # a refusal is never retried
    assert case.mocks.model_attempts() == 0 and case.mocks.attempts[ActivityName.RUN_INVESTIGATION_TOOL] == 0
    assert final.quote is None and final.proposal is None
    assert EventKind.APPLICANT_VERIFIED not in kinds(events)


# --- budgets -------------------------------------------------------------------------------------


async def test_a_flaky_model_that_keeps_investigating_spends_the_model_budget(temporal_client: Client) -> None:
    """Each model call fails once (HTTP 503) and succeeds on its retry, so each costs two requests.

    Plan (2) + seven investigation turns (14) + a draft (2) + a review asking for a rewrite (2) spend
    all 20; the rewrite is never requested.
    """
    budgets = Budgets()
    assert 2 * (1 + budgets.max_turns + 2) == budgets.max_model_requests, "the scenario assumes the default budgets"

    def flaky(behaviour: Behaviour) -> Behaviour:
        def answer(request: Any, attempt: int) -> Any:
            if attempt == 1:
                raise transient("provider_unavailable", "The mock endpoint is temporarily unavailable (HTTP 503).")
            return behaviour(request, attempt)

        return answer

    def keep_investigating(request: InvestigateRequest, attempt: int) -> InvestigateResult:
        last = request.turn == budgets.max_turns
        calls = [] if last else [tool_call(f"call-{request.turn}", "search_knowledge", query=f"refund {request.turn}")]
        return InvestigateResult(calls=calls, content=None, finish_reason="stop", meta=meta(attempt))

    def revise(request: ReviewRequest, attempt: int) -> ReviewResult:
        return ReviewResult(verdict=ReviewVerdict(verdict=Verdict.REVISE, problems=["cite p03"]), meta=meta(attempt))

    behaviours = {
        ActivityName.PLAN_CASE: flaky(plan_refund),
        ActivityName.INVESTIGATE_TURN: flaky(keep_investigating),
        ActivityName.COMPOSE_ANSWER: flaky(draft_refund),
        ActivityName.REVIEW_ANSWER: flaky(revise),
    }
    async with mocked_case(temporal_client, behaviours) as case:
        await case.start()
        final = await case.result()
        events = await case.events()

    mocks = case.mocks
    assert (final.status, final.reason) == (CaseStatus.NEEDS_HUMAN, StopCode.MODEL_BUDGET_EXHAUSTED)
    assert final.budgets.model_requests == budgets.max_model_requests == mocks.model_attempts()
    assert final.budgets.turns == budgets.max_turns
    assert mocks.attempts[ActivityName.COMPOSE_ANSWER] == 2  # one draft, two attempts; no rewrite
    assert all(request.previous is None for request in mocks.requests[ActivityName.COMPOSE_ANSWER])
    assert mocks.attempts[ActivityName.EXECUTE_REFUND] == 0 and final.proposal is None
    assert details(events, EventKind.REVIEWED) == ["draft 1: revise cite p03"]
    assert kinds(events)[-1] == EventKind.CASE_FINISHED


async def test_a_model_that_never_stops_asking_for_tools_spends_the_turn_budget(temporal_client: Client) -> None:
    def one_new_call_per_turn(request: InvestigateRequest, attempt: int) -> InvestigateResult:
        call = tool_call(f"call-{request.turn}", "search_knowledge", query=f"refund policy {request.turn}")
        return InvestigateResult(calls=[call], content=None, finish_reason="tool_calls", meta=meta(attempt))

    async with mocked_case(temporal_client, {ActivityName.INVESTIGATE_TURN: one_new_call_per_turn}) as case:
        await case.start()
        final = await case.result()

    budgets, mocks = final.budgets, case.mocks
    assert (final.status, final.reason) == (CaseStatus.NEEDS_HUMAN, StopCode.TURN_BUDGET_EXHAUSTED)
    assert budgets.turns == budgets.max_turns == mocks.attempts[ActivityName.INVESTIGATE_TURN]
    assert budgets.tool_requests == mocks.attempts[ActivityName.RUN_INVESTIGATION_TOOL] == budgets.max_turns
    assert budgets.model_requests == 1 + budgets.max_turns
    assert mocks.attempts[ActivityName.COMPOSE_ANSWER] == 0 and mocks.attempts[ActivityName.EXECUTE_REFUND] == 0


async def test_a_model_asking_for_the_most_calls_each_turn_spends_the_tool_budget(temporal_client: Client) -> None:
    per_turn = Budgets().max_calls_per_turn

    def full_turns(request: InvestigateRequest, attempt: int) -> InvestigateResult:
        calls = [
            tool_call(f"call-{request.turn}-{index}", "search_knowledge", query=f"refund {request.turn} {index}")
            for index in range(per_turn)
        ]
        return InvestigateResult(calls=calls, content=None, finish_reason="tool_calls", meta=meta(attempt))

    async with mocked_case(temporal_client, {ActivityName.INVESTIGATE_TURN: full_turns}) as case:
        await case.start()
        final = await case.result()
        events = await case.events()

    budgets, mocks = final.budgets, case.mocks
    assert (final.status, final.reason) == (CaseStatus.NEEDS_HUMAN, StopCode.TOOL_BUDGET_EXHAUSTED)
    assert budgets.tool_requests == budgets.max_tool_requests == mocks.attempts[ActivityName.RUN_INVESTIGATION_TOOL]
    assert len(details(events, EventKind.TOOL_RAN)) == budgets.max_tool_requests
    assert budgets.turns == budgets.max_tool_requests // per_turn + 1 <= budgets.max_turns  # stopped mid-turn
    assert mocks.attempts[ActivityName.COMPOSE_ANSWER] == 0 and mocks.attempts[ActivityName.EXECUTE_REFUND] == 0


# --- configuration errors ------------------------------------------------------------------------


async def test_a_model_configuration_error_fails_the_case_at_once(temporal_client: Client) -> None:
    def rejected_key(request: PlanRequest, attempt: int) -> PlanResult:
        raise ConfigurationError(
            WireCode("provider_auth_failed"), "The mock endpoint rejected the API key (HTTP 401); check OPENAI_API_KEY."
        )

    async with mocked_case(temporal_client, {ActivityName.PLAN_CASE: rejected_key}) as case:
        await case.start()
        final = await case.result()
        events = await case.events()

    mocks = case.mocks
    assert final.status is CaseStatus.FAILED
    assert final.reason == stop_reason(
        StopCode.MODEL_CONFIGURATION,
        "provider_auth_failed: The mock endpoint rejected the API key (HTTP 401); check OPENAI_API_KEY.",
    )
    assert mocks.attempts[ActivityName.PLAN_CASE] == 1  # never retried
    assert final.budgets.model_requests == 1 and mocks.attempts[ActivityName.INVESTIGATE_TURN] == 0
    assert details(events, EventKind.MODEL_FAILED) == ["plan_case: configuration: provider_auth_failed"]
    assert kinds(events)[-1] == EventKind.CASE_FINISHED


async def test_a_tool_configuration_error_fails_the_case_instead_of_reaching_the_model(
    temporal_client: Client,
) -> None:
    def token_refused(request: ToolRequest, attempt: int) -> ToolObservation:
        raise ConfigurationError(WireCode("commerce_token_rejected"), "the commerce server refused this worker's token")

    async with mocked_case(temporal_client, {ActivityName.RUN_INVESTIGATION_TOOL: token_refused}) as case:
        await case.start()
        final = await case.result()
        events = await case.events()

    mocks = case.mocks
    assert final.status is CaseStatus.FAILED
    assert final.reason == stop_reason(
        StopCode.TOOL_CONFIGURATION, "commerce_token_rejected: the commerce server refused this worker's token"
    )
    assert mocks.attempts[ActivityName.RUN_INVESTIGATION_TOOL] == 1
    assert mocks.attempts[ActivityName.INVESTIGATE_TURN] == 1  # the model never saw the failure
    assert details(events, EventKind.TOOL_FAILED) == ["calculate_refund: configuration: commerce_token_rejected"]
    assert final.quote is None and final.proposal is None


# --- settlement ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status", "reason", "attempts"),
    [
        pytest.param(
            ContractError(WireCode("receipt_mismatch"), "The receipt does not belong to this approval."),
            CaseStatus.NEEDS_HUMAN,
            stop_reason(StopCode.SETTLEMENT_UNCONFIRMED, "receipt_mismatch"),
            1,
            id="unconfirmed-malformed-receipt",
        ),
        pytest.param(
            transient("commerce_unavailable", "The commerce server did not answer."),
            CaseStatus.NEEDS_HUMAN,
            stop_reason(StopCode.SETTLEMENT_UNCONFIRMED, "commerce_unavailable"),
            SETTLE.retry.maximum_attempts,
            id="unconfirmed-retries-exhausted",
        ),
        pytest.param(
            BusinessError(WireCode("quote_changed"), "The order changed since the quote."),
            CaseStatus.NEEDS_HUMAN,
            stop_reason(StopCode.SETTLEMENT_REFUSED, "quote_changed"),
            1,
            id="refused-business",
        ),
        pytest.param(
            AuthorizationError(WireCode("approval_invalid"), "The approval does not match the proposal."),
            CaseStatus.NEEDS_HUMAN,
            stop_reason(StopCode.SETTLEMENT_REFUSED, "approval_invalid"),
            1,
            id="refused-authorization",
        ),
        pytest.param(
            ConfigurationError(WireCode("commerce_token_rejected"), "the commerce server refused this worker's token"),
            CaseStatus.FAILED,
            stop_reason(
                StopCode.SETTLEMENT_CONFIGURATION,
                "commerce_token_rejected: the commerce server refused this worker's token",
            ),
            1,
            id="configuration",
        ),
    ],
)
async def test_a_settlement_that_fails_ends_the_case_without_a_receipt(
    temporal_client: Client, error: SupportError, status: CaseStatus, reason: str, attempts: int
) -> None:
    def fail(request: SettleRequest, attempt: int) -> RefundReceipt:
        raise error

    async with mocked_case(temporal_client, {ActivityName.EXECUTE_REFUND: fail}) as case:
        await case.start()
        final = await case.approved_result()
        events = await case.events()

    settle_requests: list[SettleRequest] = case.mocks.requests[ActivityName.EXECUTE_REFUND]
    assert (final.status, final.reason) == (status, reason)
    assert final.receipt is None
    assert len(settle_requests) == attempts
    assert len({request.approval_id for request in settle_requests}) == 1  # every retry is the same payment
    assert details(events, EventKind.SETTLEMENT_FAILED) == [f"{error.error_class.value}: {error.code}"]
    assert EventKind.SETTLED not in kinds(events)
    assert lifecycle(events)[-2:] == [EventKind.SETTLEMENT_FAILED, EventKind.CASE_FINISHED]


# --- the event cap -------------------------------------------------------------------------------


async def test_refused_reviews_beyond_the_event_cap_are_counted_and_lifecycle_events_kept(
    temporal_client: Client,
) -> None:
    """400 refused reviews (half malformed, half signed by chen over a wrong digest), then one approval.

    400 is more than the cap (300; the test reads no constant, and ``dropped > 0`` fails should the cap
    ever rise above the flood).
    """
    flood = 400
    async with mocked_case(temporal_client) as case:
        handle = await case.start()
        waiting = await case.waiting_for_approval()
        malformed = {"reviewer": "chen", "decision": "approve"}  # no digest
        wrong_digest = signed_review("chen", case.case_id, "0" * 64, Decision.APPROVE)
        for batch in range(0, flood, 50):
            await asyncio.gather(
                *(handle.signal(REVIEW, malformed if i % 2 else wrong_digest) for i in range(batch, batch + 50))
            )
        final = await case.approved_result()
        events = await case.events()

    refused = details(events, EventKind.REVIEW_REFUSED)
    dropped_notes = details(events, EventKind.EVENTS_DROPPED)
    assert (final.status, final.reason) == (CaseStatus.COMPLETED, StopCode.REFUND_SETTLED)
    assert final.receipt is not None and final.digest == waiting.digest
    assert case.mocks.attempts[ActivityName.EXECUTE_REFUND] == 1
    assert len(dropped_notes) == 1
    dropped = int(dropped_notes[0].split()[0])
    replies_dropped = sum(entry.speaker is Speaker.SERVICE for entry in final.conversation) - len(
        details(events, EventKind.REPLY_SENT)
    )
    # every refusal kept or counted (and every reply to the customer past the cap, in the transcript)
    assert dropped > 0 and len(refused) + dropped == flood + replies_dropped
    assert len(events) < flood  # the flood did not grow the case's events
    assert any(r.startswith("malformed payload via signal") for r in refused)
    assert f"chen via signal: {ReviewRefusal.DIGEST_MISMATCH}" in refused  # signed by chen, for another digest
    # lifecycle events after the cap was reached are all there, in order
    assert lifecycle(events)[-4:] == [
        EventKind.REVIEW_ACCEPTED,
        EventKind.SETTLED,
        EventKind.EVENTS_DROPPED,
        EventKind.CASE_FINISHED,
    ]
    assert kinds(events)[0] == EventKind.CASE_STARTED and EventKind.PROPOSAL_CREATED in kinds(events)


# --- the case record -----------------------------------------------------------------------------


async def test_an_unwritable_case_record_is_an_event_and_the_case_keeps_waiting(temporal_client: Client) -> None:
    """The record of the proposal cannot be written (its retries are spent); the case still waits and settles."""

    def read_only_while_waiting(record: CaseRecord, attempt: int) -> str:
        if record.case.status is CaseStatus.WAITING_APPROVAL:
            raise transient("case_record_write_failed", "OSError: Read-only file system")
        return write_record(record, attempt)

    async with mocked_case(temporal_client, {ActivityName.WRITE_CASE_RECORD: read_only_while_waiting}) as case:
        await case.start()
        waiting = await case.waiting_for_approval()
        final = await case.approved_result()
        events = await case.events()

    assert waiting.status is CaseStatus.WAITING_APPROVAL and waiting.proposal is not None
    assert (waiting.record_path, waiting.record_error) == (None, "case_record_write_failed")
    after_proposal = lifecycle(events)[lifecycle(events).index(EventKind.PROPOSAL_CREATED) + 1]
    assert after_proposal == EventKind.RECORD_WRITE_FAILED
    assert details(events, EventKind.RECORD_WRITE_FAILED) == ["case_record_write_failed"]
    # the proposal's write was retried as often as RECORD allows; the final one succeeded at once
    assert case.mocks.attempts[ActivityName.WRITE_CASE_RECORD] == RECORD.retry.maximum_attempts + 1
    assert (final.status, final.reason) == (CaseStatus.COMPLETED, StopCode.REFUND_SETTLED)
    assert final.receipt is not None and case.mocks.attempts[ActivityName.EXECUTE_REFUND] == 1
    assert final.record_path == f"/records/{final.case_id}-completed.json"
