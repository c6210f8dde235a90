"""The commands that run cases on Temporal: ask, status, list, remember (a reply-language preference)
and the end-to-end evaluation. Registered on :data:`cli.app.app` when imported.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Annotated

import typer

from case_client import (
    DEFAULT_APPROVAL_TTL_SECONDS,
    CaseClient,
    CaseHandle,
    TemporalTarget,
    listing_query,
    new_case,
    retry_window_seconds,
)
from cli.app import WAIT_SECONDS, app, eval_app, settings_of
from cli.exit_codes import ExitCode, exit_code_for
from cli.following import (
    Followed,
    case_goes_on,
    read_with_progress,
    saying_on_interrupt,
    settle_with_progress,
    still_working,
)
from cli.render import (
    case_list_json,
    case_list_lines,
    console,
    customer_turn_lines,
    errors,
    grid,
    print_case_card,
    show_case,
    starter_command,
    worker_command,
)
from contracts.case import (
    MAX_APPROVAL_TTL_SECONDS,
    MAX_QUESTION_CHARS,
    MIN_APPROVAL_TTL_SECONDS,
    TERMINAL_STATUSES,
    CaseStatus,
    CaseView,
)
from contracts.case_input import CaseInput
from contracts.errors import TransientError
from contracts.knowledge import Language
from keystore.signers import KeyFileSigner


@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help=f"The customer's question (1-{MAX_QUESTION_CHARS} characters).")],
    language: Annotated[
        Language | None,
        typer.Option(help="Reply language (default: your remembered preference, else the question's language)."),
    ] = None,
    request_key: Annotated[str | None, typer.Option(help="Same key, same case (never re-run).")] = None,
    ttl_seconds: Annotated[
        int, typer.Option(help=f"Approval validity in seconds ({MIN_APPROVAL_TTL_SECONDS}-{MAX_APPROVAL_TTL_SECONDS}).")
    ] = DEFAULT_APPROVAL_TTL_SECONDS,
) -> None:
    """Start a case, with an applicant token signed by the state dir's issuer key (starter.py stands in
    for the login service), and wait until it waits for a reviewer or for your answer, or ends (exit
    status: see docs/cli.md)."""
    from activities import LanguagePreferences

    # The input is checked before anything else happens (one line on stderr, nothing started).
    case_input = new_case(
        ctx.obj.identity, question, language=language, ttl_seconds=ttl_seconds, request_key=request_key
    )
    settings = settings_of(ctx)
    if language is None:
        remembered = LanguagePreferences(settings.state_dir).get(settings.identity.subject)
        case_input = case_input.model_copy(update={"language": remembered or case_input.language})
    target = TemporalTarget.from_env()
    window = retry_window_seconds(os.environ.get("SUPPORT_RETRY_WINDOW_SECONDS"))

    starter = starter_command(settings.state_dir, settings.identity.subject)
    followed = Followed()

    async def follow() -> CaseView:
        cases = await CaseClient.connect(target)
        case = await _start_or_find(cases, case_input, request_key, window, settings.state_dir, followed)
        try:
            view = await settle_with_progress(
                case, case.case_id, settings.identity, settings.state_dir, timeout=WAIT_SECONDS
            )
        except TransientError as error:  # the case stays; say which one it is, why, and how to follow it
            kept = case_goes_on(case.case_id, starter, error, window=window)
            raise TransientError(error.code, f"{error.message}. {kept}") from None
        show_case(view, settings.state_dir)
        return view

    async def run() -> CaseView:
        return await saying_on_interrupt(followed, starter, follow)

    raise typer.Exit(exit_code_for(asyncio.run(run()).status))


async def _start_or_find(
    cases: CaseClient,
    case_input: CaseInput,
    request_key: str | None,
    window: float,
    state_dir: Path,
    followed: Followed,
) -> CaseHandle:
    """The case ``ask`` shows: the one its request key names, or the same question's case from within the
    retry window (said on stderr), or a new one (only when a worker polls the queue). ``followed`` knows
    the case id from the moment its start is sent (Ctrl-C then names it)."""
    identity = case_input.applicant
    existing = None
    if request_key is None:
        case_id, existing = await cases.retry_case(
            identity, case_input.question, window_seconds=window, now=time.time()
        )
        case_input = case_input.model_copy(update={"case_id": case_id})
    if existing is None:
        await cases.require_worker(start_hint=worker_command(state_dir))
        token = KeyFileSigner(state_dir).applicant_token(identity, case_input.case_id)
        followed.case_id = case_input.case_id
        existing = await cases.start_case(
            case_input.model_copy(update={"applicant_token": token}), request_key=request_key
        )
    followed.case_id, followed.started = existing.case_id, True
    if existing.existing_since is not None:
        since = existing.existing_since.isoformat(timespec="seconds")
        why = "request key already used" if request_key else f"the same question within {window:g} s"
        errors.print(f"{why}: showing case {existing.case_id}, started {since} (no second case was started)")
    return existing


@app.command()
def status(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the case has ended.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the case as JSON (for scripts).")] = False,
) -> None:
    """Show a case: status, answer, proposal, receipt, budgets and record path, and for a case waiting for
    the customer its question and how to answer (exit status: see docs/cli.md)."""
    from rich.text import Text

    settings = settings_of(ctx)
    target = TemporalTarget.from_env()
    starter = starter_command(settings.state_dir, settings.profile)

    async def run() -> CaseView:
        case = (await CaseClient.connect(target)).open(case_id)
        view = await read_with_progress(case, settings.identity, settings.state_dir)
        # A case waiting for the customer does nothing by itself: it is the customer's turn, not a wait.
        if wait and view.status not in TERMINAL_STATUSES and view.status is not CaseStatus.WAITING_CUSTOMER:
            with errors.status(Text(f"case {case_id}: waiting for the case to end…")):
                try:
                    view = await case.ended(timeout=WAIT_SECONDS)
                except TransientError as error:  # ran out: say what the case is doing, not "check the worker"
                    raise await still_working(case, error, waited=WAIT_SECONDS, starter=starter) from None
        if as_json:
            print(view.model_dump_json(indent=2))
        else:
            print_case_card(view, now=await _doing(case, view))
            if view.applicant == settings.identity.subject:  # the customer's turn: how to answer
                for line in customer_turn_lines(view, starter):
                    print(line)
        return view

    raise typer.Exit(exit_code_for(asyncio.run(run()).status))


async def _doing(case: CaseHandle, view: CaseView) -> str | None:
    """What a case not yet settled is doing now (a model request and its attempt, a commerce outage),
    for its card; None for a settled case or when Temporal cannot say."""
    if view.status not in (CaseStatus.QUEUED, CaseStatus.RUNNING):
        return None
    try:
        return (await case.work()).sentence()
    except TransientError:
        return None


@app.command("list")
def list_cases(
    ctx: typer.Context,
    status_filter: Annotated[CaseStatus | None, typer.Option("--status", help="Only cases in this status.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the cases as a JSON list (for scripts).")] = False,
) -> None:
    """List the cases this profile may see through Temporal visibility (search attributes).

    Reviewers see their tenant's cases; a customer sees their own. Case ids are always printed whole.
    """
    identity = settings_of(ctx).identity

    async def run() -> None:
        cases = await CaseClient.connect(TemporalTarget.from_env())
        listed = [case async for case in cases.list_cases(identity, status_filter)]
        if as_json:
            print(case_list_json(listed))
            return
        for line in case_list_lines(listing_query(identity, status_filter), listed):
            print(line)  # plain print: Rich would cut an id to fit a narrow terminal

    asyncio.run(run())


@app.command()
def remember(
    ctx: typer.Context,
    language: Annotated[Language, typer.Option(help="Preferred reply language.")],
    consent: Annotated[bool, typer.Option("--consent", help="Required: you agree that this is remembered.")] = False,
) -> None:
    """Remember your reply-language preference (only with --consent)."""
    from activities import LanguagePreferences

    settings = settings_of(ctx)
    LanguagePreferences(settings.state_dir).remember(settings.identity.subject, language, consent)
    console.print(f"remembered reply language {language.value} for {settings.identity.subject}")


@eval_app.command("cases")
def eval_cases(
    ctx: typer.Context,
    live: Annotated[bool, typer.Option("--live", help="Require a real provider (paid requests).")] = False,
) -> None:
    """Run the fixed end-to-end questions through real workflows (needs worker.py running)."""
    from rich.text import Text

    from case_eval import EVAL_CASES, check_provider_matches, eval_rows, eval_title, is_rehearsal, run_case

    settings = settings_of(ctx)
    issuer = KeyFileSigner(settings.state_dir).applicant_token

    async def run() -> bool:
        cases = await CaseClient.connect()
        await cases.require_worker(start_hint=worker_command(settings.state_dir))
        rows = []
        with errors.status(Text("running evaluation cases…")) as status:
            for number, case in enumerate(EVAL_CASES, start=1):
                status.update(Text(f"case {number}/{len(EVAL_CASES)}: {case.name}"))
                rows.append(await run_case(cases.temporal, case, cases.task_queue, WAIT_SECONDS, issuer=issuer))
                if number == 1:
                    check_provider_matches(live=live, rehearsal=is_rehearsal(rows))
        rehearsal = is_rehearsal(rows)
        console.print(grid(eval_title(rehearsal=rehearsal), eval_rows(rows, live=not rehearsal), fold=True))
        mismatches = [row.case.name for row in rows if not row.plumbing_ok]
        if mismatches:
            errors.print(f"error: {len(mismatches)} case(s) did not end as expected: {', '.join(mismatches)}")
        return not mismatches

    raise typer.Exit(ExitCode.DECIDED if asyncio.run(run()) else ExitCode.MISMATCH)
