"""Command line for the Qinghe support-case service (everything here is fictional).

Global options come before the subcommand::

    python starter.py --profile alice init
    python starter.py --profile alice mcp-tools
    python starter.py --profile alice quote QH-1001
    python starter.py --profile alice create-ticket QH-1005 "Where is my parcel?" --key k-1
    python starter.py eval retrieval
    python starter.py --profile alice ask "Please refund QH-1001 and explain the amount and the policy"
    python starter.py --profile chen review-info CASE
    python starter.py --profile chen review CASE --digest D --approve
    python starter.py status CASE
    python starter.py list --status waiting_approval

Cases need a Temporal server (TEMPORAL_ADDRESS, default localhost:7233) and a running worker.py.
Bad input gets one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from contracts.case import (
    TASK_QUEUE,
    TERMINAL_STATUSES,
    WORKFLOW_NAME,
    AnswerSource,
    CaseInput,
    CaseOptions,
    CaseStatus,
    CaseView,
    Decision,
    ReviewDecision,
    ReviewOutcome,
)
from contracts.errors import (
    AuthorizationError,
    BusinessError,
    ConfigurationError,
    ContractError,
    SupportError,
    TransientError,
)
from contracts.identity import Identity, Role, resolve_profile
from contracts.knowledge import Language
from workflows import search_attributes as sa

DEFAULT_STATE_DIR = Path(os.environ.get("SUPPORT_STATE_DIR", ".state"))

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)
eval_app = typer.Typer(no_args_is_help=True, help="Evaluations: retrieval quality and end-to-end cases.")
app.add_typer(eval_app, name="eval")
# Nothing printed here is ever read as Rich markup, emoji codes or highlighting: answers, questions,
# notes and citations come from customers and models, and "[/b]" or "[link=...]" in them is text.
console = Console(markup=False, emoji=False, highlight=False)
errors = Console(stderr=True, soft_wrap=True, markup=False, emoji=False, highlight=False)


@dataclass(frozen=True)
class Settings:
    identity: Identity
    state_dir: Path


@app.callback()
def main(
    ctx: typer.Context,
    profile: Annotated[str, typer.Option(help="Demonstration profile: alice, bob, chen, lin, mei.")] = "alice",
    state_dir: Annotated[Path, typer.Option(help="Where databases and case records live.")] = DEFAULT_STATE_DIR,
) -> None:
    """Qinghe support cases: durable, human-approved, fictional."""
    ctx.obj = Settings(identity=resolve_profile(profile), state_dir=state_dir)


def _settings(ctx: typer.Context) -> Settings:
    settings: Settings = ctx.obj
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return settings


@app.command()
def init(ctx: typer.Context) -> None:
    """Create the commerce database and insert missing fixture rows (never resets balances)."""
    from commerce_server.db import database_url, make_engine
    from commerce_server.seed import seed_fixture

    settings = _settings(ctx)
    report = seed_fixture(make_engine(database_url(settings.state_dir)))
    console.print(f"commerce database ready under {settings.state_dir} (fictional data): {report}")


@app.command("mcp-tools")
def mcp_tools(ctx: typer.Context) -> None:
    """List the commerce MCP server's tools and resources, over a real stdio session."""
    from activities.commerce_client import open_stdio_client

    settings = _settings(ctx)

    async def run() -> None:
        async with open_stdio_client(settings.identity.subject, settings.state_dir) as client:
            tools = await client.list_tools()
            resources = await client.list_resources()
        table = Table(title=f"commerce MCP server (stdio, profile {settings.identity.subject})")
        table.add_column("kind")
        table.add_column("name")
        table.add_column("description")
        for tool in tools:
            table.add_row("tool", tool.name, (tool.description or "").splitlines()[0])
        for resource in resources:
            table.add_row("resource", str(resource.uri), resource.description or "")
        console.print(table)

    asyncio.run(run())


@app.command()
def quote(ctx: typer.Context, order_id: Annotated[str, typer.Argument(help="Order id, e.g. QH-1001.")]) -> None:
    """Quote the automatic refund for one of your orders: order read through MCP, rule applied here."""
    from activities.commerce_client import open_stdio_client
    from contracts.commerce import Order
    from knowledge.refund_quote import calculate_refund_quote

    settings = _settings(ctx)

    async def run() -> None:
        async with open_stdio_client(settings.identity.subject, settings.state_dir) as client:
            order = Order.model_validate(await client.call("get_order", {"order_id": order_id}))
        result = calculate_refund_quote(order)
        table = Table(title=f"refund quote for {result.order_id} (fictional)", show_header=False)
        for label, value in [
            ("eligible", str(result.eligible)),
            ("reason", result.reason),
            ("amount", f"{result.amount_cents} cents ({result.currency} {result.amount_cents / 100:.2f})"),
            (
                "paid items / freight / refunded",
                f"{result.paid_items_cents} / {result.freight_cents} / {result.refunded_cents}",
            ),
            ("days since delivery", str(result.days_since_delivery)),
            ("rule version", result.rule_version),
            ("order version", str(result.order_version)),
            ("quote id", result.quote_id),
            ("cited pages", ", ".join(result.citations) or "-"),
            ("why", result.explanation_en),
        ]:
            table.add_row(label, value)
        console.print(table)

    asyncio.run(run())


@app.command("create-ticket")
def create_ticket(
    ctx: typer.Context,
    order_id: Annotated[str, typer.Argument(help="Order id, e.g. QH-1005.")],
    text: Annotated[str, typer.Argument(help="What the ticket is about.")],
    key: Annotated[str, typer.Option("--key", help="Idempotency key: the same key returns the same ticket.")],
) -> None:
    """Open a support ticket on one of your orders (idempotent by --key)."""
    from activities.commerce_client import open_stdio_client

    settings = _settings(ctx)

    async def run() -> None:
        async with open_stdio_client(settings.identity.subject, settings.state_dir) as client:
            ticket = await client.call("create_ticket", {"order_id": order_id, "text": text, "idempotency_key": key})
        console.print(f"ticket {ticket['ticket_id']} on {ticket['order_id']} (key {ticket['idempotency_key']})")

    asyncio.run(run())


@eval_app.command("retrieval")
def eval_retrieval() -> None:
    """Recall@4, MRR and abstention of BM25 retrieval on the labelled questions (both languages)."""
    from knowledge.retrieval_eval import retrieval_eval_rows, run_retrieval_eval
    from knowledge.store import default_knowledge_base

    report = run_retrieval_eval(default_knowledge_base())
    table = Table(title="retrieval evaluation (BM25, tenant qinghe, as of 2026-09-12)")
    rows = retrieval_eval_rows(report)
    for column in rows[0]:
        table.add_column(str(column))
    for row in rows[1:]:
        table.add_row(*(str(cell) for cell in row))
    console.print(table)


# --- cases on Temporal ---------------------------------------------------------------------------

TEMPORAL_ADDRESS = os.environ.get("TEMPORAL_ADDRESS", "localhost:7233")
TEMPORAL_NAMESPACE = os.environ.get("TEMPORAL_NAMESPACE", "default")
WAIT_SECONDS = float(os.environ.get("SUPPORT_WAIT_SECONDS", "300"))


async def _client():
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    try:
        return await Client.connect(
            TEMPORAL_ADDRESS, namespace=TEMPORAL_NAMESPACE, data_converter=pydantic_data_converter
        )
    except RuntimeError as error:
        raise TransientError(
            "temporal_unavailable",
            f"cannot reach Temporal at {TEMPORAL_ADDRESS} ({error}); is the server up?",
        ) from None


def _workflow_id(case_id: str) -> str:
    return case_id if case_id.startswith("case-") else f"case-{case_id}"


def case_id_for(request_key: str | None, identity: Identity) -> str:
    """A new random case id, or one derived from the applicant and request key (same key, same case).

    The applicant is part of the derivation, so one customer's key can never name another's case.
    """
    if request_key is None:
        return uuid.uuid4().hex[:12]
    scoped = f"{identity.tenant}:{identity.subject}:{request_key}"
    return "k" + hashlib.sha256(scoped.encode("utf-8")).hexdigest()[:15]


CASE_NOT_ACCESSIBLE = "No such case is available to this profile."


def may_see(view: CaseView, identity: Identity) -> bool:
    """The applicant sees their case; reviewers see the cases of their own tenant."""
    return view.applicant == identity.subject or (identity.role is Role.REVIEWER and identity.tenant == view.tenant)


async def _view(handle, identity: Identity) -> CaseView:
    """The case as the workflow reports it (a closed case answers from its result), if ``identity``
    may see it. A missing case and someone else's case give the same error."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError, RPCStatusCode

    try:
        description = await handle.describe()
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError("case_not_accessible", CASE_NOT_ACCESSIBLE) from None
        raise
    if description.status in (None, WorkflowExecutionStatus.RUNNING):
        view = await handle.query("status", result_type=CaseView)
    elif description.status is WorkflowExecutionStatus.COMPLETED:
        view = await handle.result()
    else:
        raise BusinessError("case_not_available", f"case workflow {handle.id} ended as {description.status.name}")
    if not may_see(view, identity):
        raise AuthorizationError("case_not_accessible", CASE_NOT_ACCESSIBLE)
    return view


async def _wait_until_settled(handle, identity: Identity, what: str) -> CaseView:
    """Poll the status query with visible progress until the case waits or ends."""
    from rich.status import Status

    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    with Status(Text(f"{what}…"), console=errors) as status:
        while True:
            view = await _view(handle, identity)
            if view.status in TERMINAL_STATUSES:
                return await handle.result()
            if view.status is CaseStatus.WAITING_APPROVAL and view.record_attempted:
                return view
            status.update(
                Text(
                    f"{what}: phase {view.phase.value}, model requests {view.budgets.model_requests}, "
                    f"tool requests {view.budgets.tool_requests}"
                )
            )
            if asyncio.get_running_loop().time() > deadline:
                raise TransientError(
                    "wait_timeout",
                    f"case {view.case_id} still running after {WAIT_SECONDS:.0f}s; check that worker.py is running",
                )
            await asyncio.sleep(0.5)


async def _wait_until_ended(handle, what: str) -> CaseView:
    """Wait, with visible progress, for the case workflow to finish."""
    from rich.status import Status

    with Status(Text(f"{what}: waiting for the case to end…"), console=errors):
        try:
            return await asyncio.wait_for(handle.result(), timeout=WAIT_SECONDS)
        except TimeoutError:
            raise TransientError("wait_timeout", f"{what} has not ended after {WAIT_SECONDS:.0f}s") from None


def review_commands(view: CaseView) -> list[str]:
    payload = {
        "reviewer": "chen" if view.tenant == "qinghe" else "mei",
        "digest": view.digest,
        "decision": "approve",
        "note": "",
    }
    reviewer = payload["reviewer"]
    wid = _workflow_id(view.case_id)
    return [
        f"python starter.py --profile {reviewer} review {view.case_id} --digest {view.digest} --approve",
        f"python starter.py --profile {reviewer} review {view.case_id} --digest {view.digest} --reject",
        f"temporal workflow signal --workflow-id {wid} --name review --input '{json.dumps(payload)}'",
        f"temporal workflow update execute --workflow-id {wid} --name review --input '{json.dumps(payload)}'",
    ]


_ANSWER_LABELS = {
    AnswerSource.MODEL_DRAFT: "answer",
    AnswerSource.RECEIPT: "answer (written by the service from the receipt)",
    AnswerSource.STATUS_NOTICE: "answer (fixed notice for this status)",
}


def _answer_label(view: CaseView) -> str:
    return _ANSWER_LABELS.get(view.answer_source, "answer") if view.answer_source else "answer"


def _print_view(view: CaseView) -> None:
    table = Table(title=f"case {view.case_id} (fictional data; model: {view.model})", show_header=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")
    rows = [
        ("status", view.status.value + (f" ({view.reason})" if view.reason else "")),
        ("phase", view.phase.value),
        ("applicant", f"{view.applicant} ({view.tenant})"),
        ("intent / order", f"{view.intent.value if view.intent else '-'} / {view.order_id or '-'}"),
        (_answer_label(view), view.answer or "-"),
        ("citations", ", ".join(view.citations) or "-"),
    ]
    if view.proposal:
        rows += [
            (
                "proposed refund",
                f"{view.proposal.amount_cents} cents for {view.proposal.order_id} "
                f"(order v{view.proposal.order_version}, rule {view.proposal.rule_version})",
            ),
            ("expires at", view.proposal.expires_at.isoformat()),
            ("digest", view.digest or "-"),
        ]
    if view.receipt:
        rows.append(("receipt", f"{view.receipt.receipt_id}: {view.receipt.amount_cents} cents (SIMULATED)"))
    rows += [
        (
            "budgets",
            f"model {view.budgets.model_requests}/{view.budgets.max_model_requests}, tools "
            f"{view.budgets.tool_requests}/{view.budgets.max_tool_requests}, turns {view.budgets.turns}",
        ),
        ("tokens", view.tokens),
        ("case record", view.record_path or (f"not written: {view.record_error}" if view.record_error else "-")),
    ]
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)


@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The customer's question.")],
    language: Annotated[
        Language | None, typer.Option(help="Reply language (default: your remembered preference, else en).")
    ] = None,
    request_key: Annotated[str | None, typer.Option(help="Same key, same case (never re-run).")] = None,
    ttl_seconds: Annotated[
        int, typer.Option(help="Approval validity in seconds.")
    ] = CaseOptions().approval_ttl_seconds,
) -> None:
    """Start a case and wait until it waits for a reviewer or ends."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from activities.preferences import LanguagePreferences

    settings = _settings(ctx)
    remembered = LanguagePreferences(settings.state_dir).get(settings.identity.subject)
    case = CaseInput(
        case_id=case_id_for(request_key, settings.identity),
        question=question,
        language=language or remembered or Language.EN,
        applicant=settings.identity,
        options=CaseOptions(approval_ttl_seconds=ttl_seconds),
    )

    async def run() -> None:
        client = await _client()
        workflow_id = _workflow_id(case.case_id)
        try:
            handle = await client.start_workflow(
                WORKFLOW_NAME,
                case,
                id=workflow_id,
                task_queue=os.environ.get("SUPPORT_TASK_QUEUE") or TASK_QUEUE,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                memo={"applicant": case.applicant.subject, "fictional": True},
                result_type=CaseView,
            )
        except WorkflowAlreadyStartedError:
            handle = client.get_workflow_handle(workflow_id, result_type=CaseView)
            errors.print(f"request key already used: showing existing case {case.case_id}")
        description = await handle.describe()
        if description.status not in (
            None,
            WorkflowExecutionStatus.RUNNING,
            WorkflowExecutionStatus.COMPLETED,
        ):
            raise BusinessError("case_closed", f"case {case.case_id} ended as {description.status.name}")
        view = await _wait_until_settled(handle, settings.identity, f"case {case.case_id}")
        if view.question != case.question:
            raise BusinessError(
                "request_key_reused", f"request key {request_key!r} was already used for another question"
            )
        _print_view(view)
        if view.status is CaseStatus.WAITING_APPROVAL:
            console.print("A reviewer of the same tenant approves or rejects with one of:")
            for command in review_commands(view):
                print(f"  {command}")

    asyncio.run(run())


@app.command("review-info")
def review_info(ctx: typer.Context, case_id: Annotated[str, typer.Argument(help="Case id.")]) -> None:
    """Show the exact proposal a reviewer approves, with its digest."""
    settings = _settings(ctx)

    async def run() -> None:
        client = await _client()
        view = await _view(client.get_workflow_handle(_workflow_id(case_id), result_type=CaseView), settings.identity)
        _print_view(view)
        if view.status is CaseStatus.WAITING_APPROVAL:
            for command in review_commands(view):
                print(f"  {command}")

    asyncio.run(run())


@app.command()
def review(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    digest: Annotated[str, typer.Option(help="The proposal digest shown by review-info.")],
    approve: Annotated[bool, typer.Option("--approve", help="Approve the proposal.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject the proposal.")] = False,
    note: Annotated[str, typer.Option(help="A note for the audit trail.")] = "",
) -> None:
    """Approve or reject a waiting proposal as the current --profile (a Temporal update)."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    if approve == reject:
        raise ContractError("invalid_arguments", "give exactly one of --approve or --reject")
    settings = _settings(ctx)
    decision = ReviewDecision(
        reviewer=settings.identity.subject,
        digest=digest,
        decision=Decision.APPROVE if approve else Decision.REJECT,
        note=note,
    )

    async def run() -> None:
        client = await _client()
        handle = client.get_workflow_handle(_workflow_id(case_id), result_type=CaseView)
        try:
            outcome = await handle.execute_update("review", decision, result_type=ReviewOutcome)
        except WorkflowUpdateFailedError as error:
            raise ContractError("review_rejected", str(error.cause or error)) from None
        except RPCError as error:
            raise BusinessError("case_not_waiting", f"case {case_id} cannot take a review: {error.message}") from None
        if not outcome.accepted:
            raise AuthorizationError("review_refused", f"{outcome.reason} (recorded in the case events)")
        console.print(f"review accepted: {outcome.reason}")
        _print_view(await _wait_until_settled(handle, settings.identity, f"case {case_id}"))

    asyncio.run(run())


@app.command()
def status(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the case has ended.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the case as JSON (for scripts).")] = False,
) -> None:
    """Show a case: status, answer, proposal, receipt, budgets and record path."""
    settings = _settings(ctx)

    async def run() -> None:
        client = await _client()
        handle = client.get_workflow_handle(_workflow_id(case_id), result_type=CaseView)
        view = await _view(handle, settings.identity)
        if wait and view.status not in TERMINAL_STATUSES:
            view = await _wait_until_ended(handle, f"case {case_id}")
        if as_json:
            print(view.model_dump_json(indent=2))
        else:
            _print_view(view)

    asyncio.run(run())


@app.command("list")
def list_cases(
    ctx: typer.Context,
    status_filter: Annotated[CaseStatus | None, typer.Option("--status", help="Only cases in this status.")] = None,
) -> None:
    """List the cases this profile may see through Temporal visibility (search attributes).

    Reviewers see their tenant's cases; a customer sees their own.
    """
    settings = _settings(ctx)
    identity = settings.identity
    query = f'WorkflowType="{WORKFLOW_NAME}" AND Tenant="{identity.tenant}"'
    if status_filter:
        query += f' AND CaseStatus="{status_filter.value}"'

    async def run() -> None:
        client = await _client()
        table = Table(title=f"cases ({query})")
        for column in ("case", "status", "phase", "order", "refund cents", "started"):
            table.add_column(column)
        async for execution in client.list_workflows(query, limit=200):
            if identity.role is not Role.REVIEWER and (await execution.memo()).get("applicant") != identity.subject:
                continue
            attrs = execution.typed_search_attributes
            table.add_row(
                execution.id.removeprefix("case-"),
                attrs.get(sa.CASE_STATUS) or "-",
                attrs.get(sa.CASE_PHASE) or "-",
                attrs.get(sa.ORDER_ID) or "-",
                str(attrs.get(sa.REFUND_CENTS) or "-"),
                execution.start_time.isoformat(timespec="seconds"),
            )
        console.print(table)

    asyncio.run(run())


@app.command()
def remember(
    ctx: typer.Context,
    language: Annotated[Language, typer.Option(help="Preferred reply language.")],
    consent: Annotated[bool, typer.Option("--consent", help="Required: you agree that this is remembered.")] = False,
) -> None:
    """Remember your reply-language preference (only with --consent)."""
    from activities.preferences import LanguagePreferences

    settings = _settings(ctx)
    LanguagePreferences(settings.state_dir).remember(settings.identity.subject, language, consent)
    console.print(f"remembered reply language {language.value} for {settings.identity.subject}")


def _check_provider_matches(*, live: bool, rehearsal: bool) -> None:
    """Stop after the first case when the worker's model is not what the operator asked for."""
    if live and rehearsal:
        raise ConfigurationError(
            "not_live",
            "--live was given but the worker answers with the rehearsal model; configure a provider "
            "for worker.py (see README)",
        )
    if not live and not rehearsal:
        raise ConfigurationError(
            "live_provider", "the worker uses a real provider, so these requests are paid: pass --live to go on"
        )


@eval_app.command("cases")
def eval_cases(
    ctx: typer.Context,
    live: Annotated[bool, typer.Option("--live", help="Require a real provider (paid requests).")] = False,
) -> None:
    """Run the fixed end-to-end questions through real workflows (needs worker.py running)."""
    from case_eval import EVAL_CASES, eval_rows, is_rehearsal, run_case

    _settings(ctx)
    task_queue = os.environ.get("SUPPORT_TASK_QUEUE") or TASK_QUEUE

    async def run() -> None:
        client = await _client()
        rows = []
        with errors.status(Text("running evaluation cases…")) as status:
            for number, case in enumerate(EVAL_CASES, start=1):
                status.update(Text(f"case {number}/{len(EVAL_CASES)}: {case.name}"))
                rows.append(await run_case(client, case, task_queue, WAIT_SECONDS))
                if number == 1:
                    _check_provider_matches(live=live, rehearsal=is_rehearsal(rows))
        rehearsal = is_rehearsal(rows)
        title = (
            "case evaluation with the REHEARSAL model: a regression check of the plumbing, not of any model's quality"
            if rehearsal
            else "case evaluation (live provider): semantic judgement PENDING"
        )
        table = Table(title=title)
        table_rows = eval_rows(rows, live=not rehearsal)
        for column in table_rows[0]:
            table.add_column(column, overflow="fold")
        for row in table_rows[1:]:
            table.add_row(*row)
        console.print(table)

    asyncio.run(run())


def run() -> None:
    """Entry point: typed errors become one line on stderr and exit status 2.

    The process ends with ``os._exit`` after flushing: the Temporal client's native runtime threads
    can otherwise crash the interpreter while it finalizes, turning a clean exit into a signal.
    """
    code = 0
    try:
        app()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    except SupportError as error:
        errors.print(f"error: {error}", markup=False, highlight=False)
        code = 2
    except Exception as error:  # a bug, not bad input: still one line unless asked for more
        if os.environ.get("SUPPORT_DEBUG"):
            raise
        errors.print(
            f"error: unexpected {type(error).__name__}: {error} (SUPPORT_DEBUG=1 shows the traceback)",
            markup=False,
            highlight=False,
        )
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
