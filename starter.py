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
import json
import os
import sys
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

from case_client import (
    TemporalTarget,
    case_handle,
    case_id_for,
    connect,
    read_case,
    require_worker,
    wait_until_ended,
    wait_until_settled,
    workflow_id,
)
from contracts import search_attributes as sa
from contracts.case import (
    MAX_APPROVAL_TTL_SECONDS,
    MAX_QUESTION_CHARS,
    MIN_APPROVAL_TTL_SECONDS,
    TERMINAL_STATUSES,
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
from contracts.names import WORKFLOW_NAME
from temporal_dev import shell_path, temporal_cli_for_display

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
            ("ledger", result.ledger_id or "-"),
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

WAIT_SECONDS = float(os.environ.get("SUPPORT_WAIT_SECONDS", "300"))
MAX_REQUEST_KEY_CHARS = 200


class ExitCode(IntEnum):
    """What the exit status of ``ask``, ``status``, ``review`` and ``eval cases`` means (README)."""

    DECIDED = 0
    """The case reached a decision: answered, a proposal waits for a reviewer, rejected, or settled."""
    UNEXPECTED = 1
    """A bug: one line on stderr (SUPPORT_DEBUG=1 shows the traceback)."""
    REFUSED = 2
    """Bad input or a refused request: one line on stderr; nothing was started or changed."""
    NEEDS_PERSON = 3
    """The case needs more input or a human (needs_input, needs_human, expired)."""
    FAILED = 4
    """The case failed (status failed)."""
    UNAVAILABLE = 5
    """Temporal or a worker could not be reached, or the wait ran out; try again."""
    MISMATCH = 6
    """``eval cases``: at least one case did not end as expected."""


_STATUS_EXIT_CODES = {
    CaseStatus.COMPLETED: ExitCode.DECIDED,
    CaseStatus.WAITING_APPROVAL: ExitCode.DECIDED,
    CaseStatus.REJECTED: ExitCode.DECIDED,
    CaseStatus.NEEDS_INPUT: ExitCode.NEEDS_PERSON,
    CaseStatus.NEEDS_HUMAN: ExitCode.NEEDS_PERSON,
    CaseStatus.EXPIRED: ExitCode.NEEDS_PERSON,
    CaseStatus.FAILED: ExitCode.FAILED,
}


def exit_code_for(status: CaseStatus) -> ExitCode:
    return _STATUS_EXIT_CODES.get(status, ExitCode.DECIDED)


def _worker_hint(settings: Settings) -> str:
    return f"{shell_path(sys.executable)} worker.py --state-dir {shell_path(settings.state_dir)}"


def review_commands(view: CaseView, settings: Settings, target: TemporalTarget) -> list[str]:
    """Ready-to-run review commands: starter.py (an update) and the Temporal CLI (signal, update)."""
    reviewer = "chen" if view.tenant == "qinghe" else "mei"
    payload = json.dumps({"reviewer": reviewer, "digest": view.digest, "decision": "approve", "note": ""})
    starter = f"{shell_path(sys.executable)} starter.py --state-dir {shell_path(settings.state_dir)}"
    temporal = f"{temporal_cli_for_display()} workflow"
    where = f"--address {target.address} --namespace {target.namespace} --workflow-id {workflow_id(view.case_id)}"
    return [
        f"{starter} --profile {reviewer} review {view.case_id} --digest {view.digest} --approve",
        f"{starter} --profile {reviewer} review {view.case_id} --digest {view.digest} --reject",
        f"{temporal} signal {where} --name review --input '{payload}'",
        f"{temporal} update execute {where} --name review --input '{payload}'",
    ]


_ANSWER_AUTHORS = {
    AnswerSource.MODEL_DRAFT: "the model (reviewed, admitted by the deliver gate)",
    AnswerSource.RECEIPT: "the service, from the commerce receipt",
    AnswerSource.STATUS_NOTICE: "the service: the fixed notice for this status",
}


def _print_view(view: CaseView) -> None:
    table = Table(title=f"case {view.case_id} (fictional data; model: {view.model})", show_header=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")
    rows = [
        ("status", view.status.value + (f" ({view.reason})" if view.reason else "")),
        ("phase", view.phase.value),
        ("applicant", f"{view.applicant} ({view.tenant})"),
        ("intent / order", f"{view.intent.value if view.intent else '-'} / {view.order_id or '-'}"),
        ("answer", view.answer or "-"),
        ("written by", _ANSWER_AUTHORS[view.answer_source] if view.answer_source else "-"),
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


def _print_review_commands(view: CaseView, settings: Settings, target: TemporalTarget) -> None:
    console.print("A reviewer of the same tenant approves or rejects with one of:")
    for command in review_commands(view, settings, target):
        print(f"  {command}")


async def _wait_with_progress(client, case_id: str, settings: Settings) -> CaseView:
    """Wait (with a progress line on stderr) until the case waits for a reviewer or ends."""
    from rich.status import Status

    with Status(Text(f"case {case_id}…"), console=errors) as spinner:

        def progress(view: CaseView) -> None:
            spinner.update(
                Text(
                    f"case {case_id}: phase {view.phase.value}, model requests {view.budgets.model_requests}, "
                    f"tool requests {view.budgets.tool_requests}"
                )
            )

        return await wait_until_settled(
            client,
            case_id,
            settings.identity,
            wait_seconds=WAIT_SECONDS,
            start_hint=_worker_hint(settings),
            on_progress=progress,
        )


def check_question(question: str) -> str:
    """The question without surrounding blanks, or one line saying what is wrong and the limit."""
    text = question.strip()
    if not text:
        raise ContractError("invalid_question", 'the question is empty; ask something, e.g. "Where is QH-1005?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise ContractError(
            "invalid_question", f"the question has {len(text)} characters; the limit is {MAX_QUESTION_CHARS}"
        )
    return text


def check_ttl(seconds: int) -> int:
    if not MIN_APPROVAL_TTL_SECONDS <= seconds <= MAX_APPROVAL_TTL_SECONDS:
        raise ContractError(
            "invalid_ttl",
            f"--ttl-seconds must be from {MIN_APPROVAL_TTL_SECONDS} to {MAX_APPROVAL_TTL_SECONDS} "
            f"(7 days); got {seconds}",
        )
    return seconds


def check_request_key(key: str | None) -> str | None:
    if key is not None and not 1 <= len(key) <= MAX_REQUEST_KEY_CHARS:
        raise ContractError(
            "invalid_request_key", f"--request-key must be 1 to {MAX_REQUEST_KEY_CHARS} characters; got {len(key)}"
        )
    return key


@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help=f"The customer's question (1-{MAX_QUESTION_CHARS} characters).")],
    language: Annotated[
        Language | None, typer.Option(help="Reply language (default: your remembered preference, else en).")
    ] = None,
    request_key: Annotated[str | None, typer.Option(help="Same key, same case (never re-run).")] = None,
    ttl_seconds: Annotated[
        int, typer.Option(help=f"Approval validity in seconds ({MIN_APPROVAL_TTL_SECONDS}-{MAX_APPROVAL_TTL_SECONDS}).")
    ] = CaseOptions().approval_ttl_seconds,
) -> None:
    """Start a case and wait until it waits for a reviewer or ends (exit status: see README)."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from activities.preferences import LanguagePreferences

    text = check_question(question)
    ttl = check_ttl(ttl_seconds)
    key = check_request_key(request_key)
    settings = _settings(ctx)
    target = TemporalTarget.from_env()
    remembered = LanguagePreferences(settings.state_dir).get(settings.identity.subject)
    case = CaseInput(
        case_id=case_id_for(key, settings.identity),
        question=text,
        language=language or remembered or Language.EN,
        applicant=settings.identity,
        options=CaseOptions(approval_ttl_seconds=ttl),
    )

    async def run() -> CaseView:
        client = await connect(target)
        await require_worker(client, target.task_queue, start_hint=_worker_hint(settings))
        try:
            await client.start_workflow(
                WORKFLOW_NAME,
                case,
                id=workflow_id(case.case_id),
                task_queue=target.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                memo={"applicant": case.applicant.subject, "fictional": True},
                result_type=CaseView,
            )
        except WorkflowAlreadyStartedError:
            errors.print(f"request key already used: showing existing case {case.case_id}")
        description = await case_handle(client, case.case_id).describe()
        if description.status not in (None, WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.COMPLETED):
            raise BusinessError("case_closed", f"case {case.case_id} ended as {description.status.name}")
        view = await _wait_with_progress(client, case.case_id, settings)
        if view.question != case.question:
            raise BusinessError("request_key_reused", f"request key {key!r} was already used for another question")
        _print_view(view)
        if view.status is CaseStatus.WAITING_APPROVAL:
            _print_review_commands(view, settings, target)
        return view

    raise typer.Exit(exit_code_for(asyncio.run(run()).status))


@app.command("review-info")
def review_info(ctx: typer.Context, case_id: Annotated[str, typer.Argument(help="Case id.")]) -> None:
    """Show the exact proposal a reviewer approves, with its digest."""
    settings = _settings(ctx)
    target = TemporalTarget.from_env()

    async def run() -> None:
        client = await connect(target)
        view = await read_case(client, case_id, settings.identity, start_hint=_worker_hint(settings))
        _print_view(view)
        if view.status is CaseStatus.WAITING_APPROVAL:
            _print_review_commands(view, settings, target)

    asyncio.run(run())


@app.command()
def review(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    digest: Annotated[str, typer.Option(help="The proposal digest shown by review-info.")],
    approve: Annotated[bool, typer.Option("--approve", help="Approve the proposal.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject the proposal.")] = False,
    note: Annotated[str, typer.Option(help="A note for the audit trail (up to 500 characters).")] = "",
) -> None:
    """Approve or reject a waiting proposal as the current --profile (a Temporal update)."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.exceptions import ApplicationError
    from temporalio.service import RPCError

    if approve == reject:
        raise ContractError("invalid_arguments", "give exactly one of --approve or --reject")
    settings = _settings(ctx)
    target = TemporalTarget.from_env()
    decision = ReviewDecision(
        reviewer=settings.identity.subject,
        digest=digest,
        decision=Decision.APPROVE if approve else Decision.REJECT,
        note=note,
    )

    async def run() -> CaseView:
        client = await connect(target)
        # The same answer as review-info for a case this profile may not see: it may not exist either.
        await read_case(client, case_id, settings.identity, start_hint=_worker_hint(settings))
        try:
            outcome = await case_handle(client, case_id).execute_update("review", decision, result_type=ReviewOutcome)
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            reason = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
            raise AuthorizationError("review_refused", f"{reason} (recorded in the case events)") from None
        except RPCError as error:
            raise BusinessError("case_not_waiting", f"case {case_id} cannot take a review: {error.message}") from None
        if not outcome.accepted:
            raise AuthorizationError("review_refused", f"{outcome.reason} (recorded in the case events)")
        console.print(f"review accepted: {outcome.reason}")
        view = await _wait_with_progress(client, case_id, settings)
        _print_view(view)
        return view

    raise typer.Exit(exit_code_for(asyncio.run(run()).status))


@app.command()
def status(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the case has ended.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the case as JSON (for scripts).")] = False,
) -> None:
    """Show a case: status, answer, proposal, receipt, budgets and record path (exit status: see README)."""
    settings = _settings(ctx)
    target = TemporalTarget.from_env()

    async def run() -> CaseView:
        client = await connect(target)
        view = await read_case(client, case_id, settings.identity, start_hint=_worker_hint(settings))
        if wait and view.status not in TERMINAL_STATUSES:
            with errors.status(Text(f"case {case_id}: waiting for the case to end…")):
                view = await wait_until_ended(client, case_id, wait_seconds=WAIT_SECONDS)
        if as_json:
            print(view.model_dump_json(indent=2))
        else:
            _print_view(view)
        return view

    raise typer.Exit(exit_code_for(asyncio.run(run()).status))


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
        client = await connect(TemporalTarget.from_env())
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

    settings = _settings(ctx)
    target = TemporalTarget.from_env()

    async def run() -> bool:
        client = await connect(target)
        await require_worker(client, target.task_queue, start_hint=_worker_hint(settings))
        task_queue = target.task_queue
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
        mismatches = [row.case.name for row in rows if not row.plumbing_ok]
        if mismatches:
            errors.print(f"error: {len(mismatches)} case(s) did not end as expected: {', '.join(mismatches)}")
        return not mismatches

    raise typer.Exit(ExitCode.DECIDED if asyncio.run(run()) else ExitCode.MISMATCH)


def _one_line(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "input"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"invalid input: {where}: {first['msg']}{more}"


def run() -> None:
    """Entry point: every refusal is one line on stderr with the exit status of :class:`ExitCode`.

    The process ends with ``os._exit`` after flushing: the Temporal client's native runtime threads
    can otherwise crash the interpreter while it finalizes, turning a clean exit into a signal.
    """
    code: int = ExitCode.DECIDED
    try:
        returned = app(standalone_mode=False)
        code = returned if isinstance(returned, int) else ExitCode.DECIDED
    except typer.Exit as exit_:
        code = exit_.exit_code
    except NoArgsIsHelpError as error:
        error.show()
        code = error.exit_code
    except TyperException as error:  # a usage error: unknown command, bad option value, ...
        errors.print(f"error: {' '.join(error.format_message().split())} (see --help)")
        code = ExitCode.REFUSED
    except typer.Abort:
        errors.print("error: aborted")
        code = ExitCode.REFUSED
    except SupportError as error:
        errors.print(f"error: {error}")
        code = ExitCode.UNAVAILABLE if isinstance(error, TransientError) else ExitCode.REFUSED
    except ValidationError as error:
        errors.print(f"error: {_one_line(error)}")
        code = ExitCode.REFUSED
    except Exception as error:  # a bug, not bad input: still one line unless asked for more
        if os.environ.get("SUPPORT_DEBUG"):
            raise
        errors.print(f"error: unexpected {type(error).__name__}: {error} (SUPPORT_DEBUG=1 shows the traceback)")
        code = ExitCode.UNEXPECTED
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code))


if __name__ == "__main__":
    run()
