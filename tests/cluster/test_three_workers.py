"""The deployment topology without Docker: three worker processes, one commerce service, one SIGKILL.

A Temporal dev server; the commerce MCP server as its own service over Streamable HTTP on PostgreSQL,
in a schema of its own; three ``python worker.py`` processes on one task queue, each with its own
state dir, all reaching that service with ``COMMERCE_MCP_URL`` and the shared token secret. Sixty
cases run at once: refunds a reviewer approves (each on an order of its own, so each pays exactly
once), refunds a reviewer rejects, refunds left to expire, delivery questions, and questions about
someone else's order. While they run, the worker holding the most of them is SIGKILLed (its whole
process group); later a replacement starts on its state dir. Every case must end as a single worker
would end it, every approved refund must be paid exactly once and nothing else at all.

The orders: the fixture has five refundable orders, so the test adds copies of them (new order ids,
invoices and tracking numbers) to its own schema before the service starts: one order per refund case.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from activities.runtime.startup_checks import LEDGER_MARK
from case_client._conversation import new_message_id, send_message
from commerce_server.db import ApprovalUseRow, OrderRow, RefundRow, read_ledger_id
from commerce_server.seed import load_fixture
from contracts.case import TERMINAL_STATUSES, CaseStatus, CaseView, Decision, ReviewOutcome
from contracts.conversation import CustomerMessage
from contracts.model_io import Intent
from contracts.names import QueryName
from keystore import demo_identity
from tests.case_world import CaseWorld
from tests.cluster.conftest import Cluster, CommerceSchema, add_orders
from tests.credentials_support import applicant_token, signed_review
from tests.faults.fault_support import WorkerProcess, alive, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

REVIEWER = "chen"
APPROVED, REJECTED, EXPIRING, DELIVERY, FOREIGN = 15, 10, 10, 15, 10
EXPIRY_TTL_SECONDS = 4
KILL_AT_WAITING = 4
"""The kill lands once this many approve/reject cases wait for their (held) review; the other cases
are in flight then (all sixty progress together), and the killed worker's cache holds at least two of them."""
CASE_TIMEOUT = 240.0

# Refundable fixture orders (eligible, amount = paid items - already refunded) by customer.
REFUNDABLE = {"alice": ("QH-1001", "QH-1002", "QH-1009"), "bob": ("QH-2001", "QH-2002")}
DELIVERY_QUESTIONS = {"alice": "QH-1005", "bob": "QH-2005", "lin": "QH-3005"}
# (who asks, whose order): another customer of the tenant, and a customer of another tenant.
FOREIGN_ASKS = (("alice", "QH-2001"), ("bob", "QH-1001"), ("lin", "QH-1002"), ("alice", "QH-3001"))


@dataclass
class Planned:
    """One case of the run and what a single worker makes of it."""

    kind: str
    profile: str
    order_id: str
    question: str
    ttl: int = 900
    expected: CaseStatus = CaseStatus.COMPLETED
    handle: WorkflowHandle | None = None
    final: CaseView | None = None
    reviewed: bool = False
    secrets_of_owner: tuple[str, ...] = field(default=())


def plan_cases() -> tuple[list[Planned], dict[str, str]]:
    """The sixty cases and the order copies they need (``{new order id: fixture order id}``)."""
    fixture = {order["order_id"]: order for order in load_fixture()["orders"]}
    clones: dict[str, str] = {}
    cases: list[Planned] = []
    counters = {"alice": 100, "bob": 100}

    def refund_order(index: int) -> tuple[str, str]:
        profile = ("alice", "bob")[index % 2]
        sources = REFUNDABLE[profile]
        counters[profile] += 1
        new_id = f"QH-{'1' if profile == 'alice' else '2'}{counters[profile]:03d}"
        clones[new_id] = sources[index // 2 % len(sources)]
        return profile, new_id

    for kind, count, expected, ttl in (
        ("approve", APPROVED, CaseStatus.COMPLETED, 900),
        ("reject", REJECTED, CaseStatus.REJECTED, 900),
        ("expire", EXPIRING, CaseStatus.EXPIRED, EXPIRY_TTL_SECONDS),
    ):
        for index in range(count):
            profile, order_id = refund_order(index)
            question = f"Please refund {order_id} and explain the amount and the policy"
            cases.append(Planned(kind, profile, order_id, question, ttl, expected))
    profiles = list(DELIVERY_QUESTIONS)
    for index in range(DELIVERY):
        profile = profiles[index % len(profiles)]
        order_id = DELIVERY_QUESTIONS[profile]
        question = f"Where is my order {order_id}? Can I still change the delivery address?"
        cases.append(Planned("delivery", profile, order_id, question))
    for index in range(FOREIGN):
        profile, order_id = FOREIGN_ASKS[index % len(FOREIGN_ASKS)]
        owner = fixture[order_id]
        owner_secrets = (
            owner["customer"],
            owner["invoice"]["invoice_id"],
            owner["shipment"]["tracking_number"],
        )
        question = f"Please refund {order_id} and tell me what was bought"
        cases.append(
            Planned(
                "foreign", profile, order_id, question, expected=CaseStatus.WITHDRAWN, secrets_of_owner=owner_secrets
            )
        )
    # Interleave the kinds, so every batch of starts mixes them.
    mixed = [case for _, case in sorted(enumerate(cases), key=lambda pair: pair[0] % 10)]
    return mixed, clones


async def poll(check: Callable[[], Awaitable[Any]], what: str, timeout: float, interval: float = 0.5) -> Any:
    """Await ``check()`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(interval)


async def count(client: Client, query: str) -> int:
    return (await client.count_workflows(query)).count


def word(text: str, needle: str) -> bool:
    """``needle`` as a word of ``text`` (not inside a longer token)."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(needle)}(?![A-Za-z0-9])", text) is not None


# --- reviews --------------------------------------------------------------------------------------


class Reviewer:
    """Reviews every approve/reject case once it waits for a reviewer: approvals by the ``review``
    update (its outcome must be accepted), rejections by the ``review`` signal. Which cases wait is
    read from visibility (one list call a round), so sixty cases do not mean sixty status queries.

    Reviews are held until :meth:`release`: the cases already waiting stay where they are (each on the
    sticky cache of the worker that ran its last workflow task) until the test has killed a worker."""

    def __init__(self, client: Client, task_queue: str, cases: list[Planned]) -> None:
        self.client = client
        self.task_queue = task_queue
        self.pending = {
            case.handle.id: case for case in cases if case.kind in ("approve", "reject", "foreign") and case.handle
        }
        self.waiting: dict[str, tuple[Planned, CaseView]] = {}
        """Cases seen waiting for a reviewer whose review has not been sent yet."""
        self.released = False
        self.sent: list[asyncio.Task[None]] = []

    def release(self) -> None:
        self.released = True

    async def run(self, timeout: float) -> None:
        try:
            await poll(self._round, f"{len(self.pending)} cases to wait for a reviewer", timeout)
            await asyncio.gather(*self.sent)
        finally:
            for task in self.sent:
                task.cancel()

    async def _round(self) -> bool:
        if self.pending:
            waiting = '(CaseStatus="waiting_approval" OR CaseStatus="waiting_customer")'
            query = f'TaskQueue="{self.task_queue}" AND {waiting}'
            listed = [found.id async for found in self.client.list_workflows(query) if found.id in self.pending]
            await asyncio.gather(*(self._read(workflow_id) for workflow_id in listed))
        if self.released:
            for case, view in self.waiting.values():
                self.sent.append(asyncio.create_task(self._review(case, view)))
            self.waiting.clear()
        return self.released and not self.pending and not self.waiting

    async def _read(self, workflow_id: str) -> None:
        case = self.pending[workflow_id]
        assert case.handle is not None
        try:
            view = await case.handle.query(QueryName.STATUS, result_type=CaseView, rpc_timeout=timedelta(seconds=5))
        except RPCError:
            return  # e.g. its worker was just killed: asked again next round
        waiting_customer = view.status is CaseStatus.WAITING_CUSTOMER
        if (waiting_customer or (view.status is CaseStatus.WAITING_APPROVAL and view.digest)) and view.record_attempted:
            del self.pending[workflow_id]
            self.waiting[workflow_id] = (case, view)

    async def _review(self, case: Planned, view: CaseView) -> None:
        assert case.handle is not None
        if case.kind == "foreign":  # the service asked which order: the customer withdraws instead
            token = applicant_token(demo_identity(case.profile), view.case_id)
            message = CustomerMessage(text="withdraw", token=token, message_id=new_message_id())
            await send_message(case.handle, message)
            return
        assert view.digest is not None
        if case.kind == "approve":
            outcome = await case.handle.execute_update(
                "review", signed_review(REVIEWER, view.case_id, view.digest), result_type=ReviewOutcome
            )
            assert outcome.accepted, (case.order_id, outcome)
        else:
            await case.handle.signal("review", signed_review(REVIEWER, view.case_id, view.digest, Decision.REJECT))
        case.reviewed = True


# --- histories ------------------------------------------------------------------------------------

_IDENTITY_FIELDS = (
    "workflow_task_started_event_attributes",
    "workflow_task_completed_event_attributes",
    "activity_task_started_event_attributes",
    "activity_task_completed_event_attributes",
    "activity_task_failed_event_attributes",
)


@dataclass
class HistoryFacts:
    """Which workers a case's history shows, in order, and its retries."""

    workers: list[str] = field(default_factory=list)
    """The worker identity of every worker-side event, in history order."""
    activity_retries: int = 0
    """Activities whose final attempt was not the first (a killed attempt timed out, then retried)."""
    workflow_task_timeouts: int = 0
    sticky: str = ""
    """The worker that completed the last workflow task: the case sits in its cache (sticky queue)."""


async def history_facts(handle: WorkflowHandle) -> HistoryFacts:
    facts = HistoryFacts()
    async for event in handle.fetch_history_events():
        kind = event.WhichOneof("attributes")  # at most one of them is set on an event
        if kind in _IDENTITY_FIELDS:
            identity = getattr(event, kind).identity
            if LEDGER_MARK in identity:  # a worker's, not the test client's (signals, updates)
                facts.workers.append(identity)
                if kind == "workflow_task_completed_event_attributes":
                    facts.sticky = identity
        if kind == "activity_task_started_event_attributes":
            facts.activity_retries += event.activity_task_started_event_attributes.attempt > 1
        elif kind == "workflow_task_timed_out_event_attributes":
            facts.workflow_task_timeouts += 1
    return facts


def pid_of(identity: str) -> int:
    return int(identity.split("@", 1)[0])


async def worker_holding_most(
    handles: list[WorkflowHandle], workers: list[WorkerProcess]
) -> tuple[WorkerProcess, list[str]]:
    """Of ``workers``, the one whose cache holds the most of these cases, and the ids of those cases."""
    facts = await asyncio.gather(*(history_facts(handle) for handle in handles))
    held: dict[int, list[str]] = {}
    for handle, fact in zip(handles, facts, strict=True):
        if fact.sticky:
            held.setdefault(pid_of(fact.sticky), []).append(handle.id)
    pid = max((worker.pid for worker in workers), key=lambda pid: len(held.get(pid, [])))
    return next(worker for worker in workers if worker.pid == pid), held.get(pid, [])


# --- the test -------------------------------------------------------------------------------------


async def test_sixty_cases_on_three_workers_survive_a_sigkill_and_pay_exactly_once(
    temporal_client: Client, commerce_schema: CommerceSchema, cluster: Callable[[], Cluster], tmp_path: Path
) -> None:
    began = time.monotonic()
    cases, clones = plan_cases()
    assert len(cases) == 60 and len(set(clones)) == APPROVED + REJECTED + EXPIRING
    add_orders(commerce_schema.engine, clones)
    with Session(commerce_schema.engine) as session:
        seeded = {row.order_id: (row.refunded_cents, row.version) for row in session.exec(select(OrderRow)).all()}
    ledger_id = read_ledger_id(commerce_schema.engine)
    assert ledger_id is not None

    nodes = cluster()
    workers = [nodes.spawn(name) for name in ("worker-a", "worker-b", "worker-c")]
    await asyncio.gather(*(worker.ready() for worker in workers))
    # Each worker checked the service at start-up and names the ledger of the test's own schema.
    for worker in workers:
        log = worker.log()
        assert "over Streamable HTTP, token accepted" in log and f"ledger {ledger_id})" in log, log[-2000:]
    world = CaseWorld(temporal_client, tmp_path, nodes.task_queue, commerce_schema.engine)
    started_at = time.monotonic()

    for batch in range(0, len(cases), 10):
        chunk = cases[batch : batch + 10]
        handles = await asyncio.gather(
            *(world.start(case.question, profile=case.profile, ttl=case.ttl) for case in chunk)
        )
        for case, handle in zip(chunk, handles, strict=True):
            case.handle = handle
    handles_by_id = {case.handle.id: case for case in cases if case.handle}
    assert len(handles_by_id) == 60
    reviewer = Reviewer(temporal_client, nodes.task_queue, cases)
    reviews = asyncio.create_task(reviewer.run(CASE_TIMEOUT))

    settled_query = f'TaskQueue="{nodes.task_queue}" AND (ExecutionStatus!="Running" OR CaseStatus="waiting_approval")'
    try:
        await wait_until(
            lambda: reviews.done() or len(reviewer.waiting) >= KILL_AT_WAITING,
            f"{KILL_AT_WAITING} cases to wait for a reviewer before the kill",
            timeout=CASE_TIMEOUT,
        )
        if reviews.done():
            reviews.result()  # its failure, if it failed
        waiting = [case.handle for case, _ in reviewer.waiting.values() if case.handle]
        victim, held = await worker_holding_most(waiting, workers)
        assert held, f"none of {len(waiting)} waiting cases is cached by any worker"
        settled_at_kill = await count(temporal_client, settled_query)
        victim.sigkill()
        assert not alive(victim.pid)
        killed_at = time.monotonic()
        reviewer.release()
        survivors = [worker for worker in workers if worker is not victim]
        # The two survivors carry on alone for a while before the replacement joins.
        await poll(
            lambda: _at_least(temporal_client, settled_query, min(settled_at_kill + 5, 60)),
            "the surviving workers to settle more cases",
            CASE_TIMEOUT,
        )
        replacement = nodes.spawn(f"{victim.log_path.stem}-restarted", state_dir=victim.log_path.parent / "state")
        await replacement.ready()
        restarted_at = time.monotonic()

        results = await asyncio.wait_for(
            asyncio.gather(*(case.handle.result() for case in cases if case.handle)), timeout=CASE_TIMEOUT
        )
        await asyncio.wait_for(reviews, timeout=CASE_TIMEOUT)
    finally:
        if not reviews.done():
            reviews.cancel()
            with contextlib.suppress(BaseException):
                await reviews
    ended_at = time.monotonic()
    for case, final in zip(cases, results, strict=True):
        case.final = final

    # --- every case ends as a single worker ends it; none is lost ---------------------------------
    assert all(case.final is not None and case.final.status in TERMINAL_STATUSES for case in cases)
    wrong = [
        (case.kind, case.order_id, case.final.status, case.final.reason)
        for case in cases
        if case.final is not None and case.final.status is not case.expected
    ]
    assert wrong == [], wrong
    open_cases = await count(temporal_client, f'TaskQueue="{nodes.task_queue}" AND ExecutionStatus="Running"')
    assert open_cases == 0
    for case in cases:
        final = case.final
        assert final is not None
        if case.kind == "approve":
            assert case.reviewed and final.reason == "refund_settled"
            assert final.proposal is not None and final.receipt is not None
            assert (final.receipt.order_id, final.receipt.amount_cents) == (case.order_id, final.proposal.amount_cents)
        elif case.kind in ("reject", "expire"):
            assert final.proposal is not None and final.proposal.order_id == case.order_id
            assert final.receipt is None and case.reviewed == (case.kind == "reject")
        elif case.kind == "delivery":
            assert (final.intent, final.proposal, final.receipt) == (Intent.DELIVERY, None, None), final.reason
        else:  # a foreign order: nothing of its owner's records reaches the asker
            assert (final.proposal, final.quote, final.receipt) == (None, None, None)
            shown = [final.model_dump_json()]
            if final.record_path and Path(final.record_path).exists():
                shown.append(Path(final.record_path).read_text(encoding="utf-8"))
            leaks = [secret for text in shown for secret in case.secrets_of_owner if word(text, secret)]
            assert leaks == [], (case.profile, case.order_id, leaks)

    # --- the ledger: one refund per approved case, of its quoted amount, and nothing else ---------
    approved = {case.order_id: case for case in cases if case.kind == "approve"}
    with Session(commerce_schema.engine) as session:
        refunds = list(session.exec(select(RefundRow)).all())
        uses = list(session.exec(select(ApprovalUseRow)).all())
        orders = {row.order_id: row for row in session.exec(select(OrderRow)).all()}
    expected_refunds = sorted(
        (case.order_id, case.final.proposal.amount_cents, case.final.receipt.receipt_id, case.final.case_id)
        for case in approved.values()
        if case.final and case.final.proposal and case.final.receipt
    )
    assert sorted((r.order_id, r.amount_cents, r.receipt_id, r.case_id) for r in refunds) == expected_refunds
    assert len(refunds) == len(uses) == APPROVED
    fixture_amounts = {o["order_id"]: o["paid_items_cents"] - o["refunded_cents"] for o in load_fixture()["orders"]}
    for order_id, case in approved.items():
        assert case.final and case.final.proposal
        quoted = case.final.proposal.amount_cents
        assert quoted == fixture_amounts[clones[order_id]]
        refunded, version = seeded[order_id]
        assert (orders[order_id].refunded_cents, orders[order_id].version) == (refunded + quoted, version + 1)
    untouched = {
        order_id: (row.refunded_cents, row.version) for order_id, row in orders.items() if order_id not in approved
    }
    assert untouched == {order_id: seeded[order_id] for order_id in untouched}
    assert set(orders) == set(seeded)

    # --- the kill really hit work in flight, which other workers finished --------------------------
    facts = dict(
        zip(
            handles_by_id,
            await asyncio.gather(*(history_facts(case.handle) for case in handles_by_id.values() if case.handle)),
            strict=True,
        )
    )
    identities = {identity for fact in facts.values() for identity in fact.workers}
    assert {identity.split(LEDGER_MARK, 1)[1] for identity in identities} == {ledger_id}
    victim_prefix = f"{victim.pid}@"
    touched = {
        workflow_id
        for workflow_id, fact in facts.items()
        if any(identity.startswith(victim_prefix) for identity in fact.workers)
    }
    # Cases the killed worker worked on whose last worker event is another worker's: it had them in flight.
    handed_over = {
        workflow_id for workflow_id in touched if not facts[workflow_id].workers[-1].startswith(victim_prefix)
    }
    per_worker = Counter(pid_of(identity) for fact in facts.values() for identity in set(fact.workers))
    names = {worker.pid: worker.log_path.stem for worker in [*workers, replacement]}
    kinds = Counter(case.final.status.value for case in cases if case.final)
    print(
        f"\ncluster: {len(cases)} cases ended {dict(sorted(kinds.items()))}; refunds {len(refunds)} "
        f"(approval uses {len(uses)}), untouched orders {len(untouched)}; killed {names[victim.pid]} "
        f"(pid {victim.pid}) at {settled_at_kill}/60 settled, holding {len(held)} of {len(waiting)} waiting cases: "
        f"in {len(touched)} histories, {len(handed_over)} finished by others; activity retries "
        f"{sum(f.activity_retries for f in facts.values())}, workflow task timeouts "
        f"{sum(f.workflow_task_timeouts for f in facts.values())}; cases per worker "
        f"{ {names.get(pid, pid): n for pid, n in sorted(per_worker.items())} }; survivors "
        f"{[names[w.pid] for w in survivors]}; times: setup {started_at - began:.1f}s, kill at "
        f"+{killed_at - started_at:.1f}s, restart at +{restarted_at - started_at:.1f}s, all ended at "
        f"+{ended_at - started_at:.1f}s"
    )
    # It had worked on cases, and those it held when it died were finished by other workers.
    assert set(held) <= touched and set(held) <= handed_over, (sorted(set(held) - handed_over), victim.pid)


async def _at_least(client: Client, query: str, wanted: int) -> bool:
    return await count(client, query) >= wanted
