"""``starter.py verify CASE [--history FILE ...]``: the case's chain of proof, checked from its workflow
history and the public keys only (:mod:`case_history.verify`). Registered on :data:`cli.app.app` when imported.

The history is fetched from Temporal: the latest run of the case and, run by run, every run it was
continued from (the run ids Temporal recorded), plus the start of every other run of the same workflow
id (a replayed applicant token shows there). Or it is read from files exported with ``temporal workflow
show --output json``, one per run. The keys are the directory's (``SUPPORT_DIRECTORY`` or the state
dir's), never the directory recorded in the history. Exit 0 when every link holds, 7 naming the first broken
link, 8 when the case has not reached a signed receipt (README: exit status).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

from case_client import CASE_NOT_ACCESSIBLE, CaseClient, ClientErrorCode, TemporalTarget, workflow_id
from case_history.action_trail import action_trail
from case_history.conversation import Conversation, run_conversation, whole_conversation
from case_history.trail import MAX_CHAIN_RUNS, CaseTrail, history_from_file, run_chain, trail_from_history
from case_history.verify import ChainReport, OtherStart, verify_chain
from case_history.verify_action import verify_action_chain
from case_history.verify_conversation import ConversationReport, MessageCheck, verify_conversation
from cli.app import app, settings_of
from cli.exit_codes import ExitCode
from cli.render import chain_lines, errors
from contracts.errors import AuthorizationError, TransientError
from contracts.identity import Identity, Role
from contracts.names import case_id_of
from keystore import directory_location, load_directory


def may_verify(trail: CaseTrail, identity: Identity) -> bool:
    """Read from Temporal, a case is verified by its applicant or a reviewer of its tenant (as ``status``)."""
    case = trail.case.value
    if case is None:
        return identity.role is Role.REVIEWER
    applicant = case.applicant
    return identity.subject == applicant.subject or (
        identity.role is Role.REVIEWER and identity.tenant == applicant.tenant
    )


async def fetch_runs(target: TemporalTarget, case_id: str) -> list[WorkflowHistory]:
    """The histories of the case's runs, first run first (see :func:`fetch_chain`); a missing case is
    ``case_not_accessible``."""
    cases = await CaseClient.connect(target)
    return await _runs(cases.temporal, case_id)


async def _runs(client: Client, case_id: str) -> list[WorkflowHistory]:
    """Walked back from the latest run through the run each one was continued from."""
    histories = [await _history(client, case_id, None)]
    earlier = trail_from_history(histories[0]).continued_from
    while earlier and len(histories) < MAX_CHAIN_RUNS:
        histories.insert(0, await _history(client, case_id, earlier))
        earlier = trail_from_history(histories[0]).continued_from
    return histories


async def fetch_chain(
    target: TemporalTarget, case_id: str
) -> tuple[list[WorkflowHistory], list[CaseTrail], list[OtherStart]]:
    """The case's runs, first run first (walked back from the latest run through the run each one was
    continued from), as histories and as trails, and the starts of the workflow id's other runs."""
    cases = await CaseClient.connect(target)
    histories = await _runs(cases.temporal, case_id)
    chain = [trail_from_history(history) for history in histories]
    ours = {trail.run_id for trail in chain}
    others: list[OtherStart] = []
    async for execution in cases.temporal.list_workflows(f'WorkflowId = "{workflow_id(case_id)}"'):
        if execution.run_id in ours:
            continue
        other = trail_from_history(await _history(cases.temporal, case_id, execution.run_id))
        if other.continued_from or other.run_started_at is None:
            continue  # a continuation of another chain; that chain's first run is listed too
        token = other.case.value.applicant_token if other.case.value else None
        others.append(OtherStart(other.run_id, other.run_started_at, token))
    return histories, chain, others


async def _history(client: Client, case_id: str, run_id: str | None) -> WorkflowHistory:
    try:
        return await client.get_workflow_handle(workflow_id(case_id), run_id=run_id).fetch_history()
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE) from None
        message = f"cannot fetch the history of case {case_id}: {error.message}"
        raise TransientError(ClientErrorCode.TEMPORAL_UNAVAILABLE, message) from None


@app.command()
def verify(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    history: Annotated[
        list[Path] | None,
        typer.Option(
            help="A history exported by `temporal workflow show --output json` instead of Temporal's; "
            "repeat it once per run of a case that continued as new."
        ),
    ] = None,
) -> None:
    """Check the case's chain offline: applicant token -> proposal digest -> approval token -> receipt, or for
    an action applicant token -> action proposal -> confirmation -> approvals -> action receipt (exit 0: all
    hold; 7: a link is broken; 8: the case has not reached a signed receipt)."""
    settings = settings_of(ctx)
    plain_id = case_id_of(workflow_id(case_id))
    location = directory_location(settings.state_dir)
    keys = load_directory(location)
    others: list[OtherStart] = []
    if history:
        histories = [history_from_file(path, workflow_id(plain_id)) for path in history]
        runs = run_chain([trail_from_history(one) for one in histories])
        source = f"the history file{'s' if len(history) > 1 else ''} {', '.join(str(path) for path in history)}"
    else:
        target = TemporalTarget.from_env()
        histories, runs, others = asyncio.run(fetch_chain(target, plain_id))
        if not may_verify(runs[0], settings.identity):
            raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE)
        runs_read = f"{len(runs)} runs" if len(runs) > 1 else "1 run"
        source = f"the workflow history on {target.address} (namespace {target.namespace}; {runs_read})"
    action = action_trail(histories)
    if action.proposes:
        report = verify_action_chain(runs, action, keys, case_id=plain_id, other_starts=others)
    else:
        report = verify_chain(runs, keys, case_id=plain_id, other_starts=others)
    talk = verify_conversation(chain_conversation(histories, runs), runs[0].case.value, keys)
    for line in [*chain_lines(report, source, location), *conversation_lines(talk)]:
        print(line)  # plain print: nothing from the history is read as markup
    broken, spoken = report.first_broken, talk.first_broken
    if broken is not None:
        errors.print(f"error: chain_broken: the {broken.name} link is broken: {broken.detail}")
    elif spoken is not None:
        errors.print(f"error: conversation_broken: {_which(spoken)} does not hold: {spoken.detail}")
    elif report.verified:
        print(f"chain verified: {' -> '.join(link.name for link in report.links)}")
    else:
        print(f"chain incomplete: {', '.join(link.name for link in report.absent)} absent; what is there holds")
    raise typer.Exit(exit_code_of(report, talk))


def chain_conversation(histories: list[WorkflowHistory], runs: list[CaseTrail]) -> Conversation:
    """The conversation of the chain's runs, in the chain's order (a history not in the chain is left out)."""
    by_run = {run.run_id: run for run in map(run_conversation, histories)}
    return whole_conversation([by_run[trail.run_id] for trail in runs if trail.run_id in by_run])


def conversation_lines(report: ConversationReport) -> list[str]:
    """``verify``'s lines for the conversation: one per customer message, then the refused messages."""
    if not report.checks:
        return ["conversation: no transcript in the history (a case before release 0.11 keeps none)"]
    missing = f"; {report.missing} earlier entries not read" if report.missing else ""
    lines = [
        f"conversation: {report.messages} customer message(s), {report.replies} repl"
        f"{'y' if report.replies == 1 else 'ies'} of the service, "
        f"{report.refused} refused, from {report.read_from}{missing}"
    ]
    for check in report.checks:
        lines.append(f"  {_which(check):<12}  {check.state.value:<9}  {check.detail}")
    unchecked = report.unchecked
    if unchecked:
        lines.append(f"  {len(unchecked)} message(s) not re-verifiable offline: an outside issuer signed their tokens")
    return lines


def _which(check: MessageCheck) -> str:
    return f"message {check.turn}" if check.seq else "refused"


def exit_code_of(report: ChainReport, conversation: ConversationReport | None = None) -> ExitCode:
    if report.first_broken is not None or (conversation is not None and conversation.first_broken is not None):
        return ExitCode.CHAIN_BROKEN
    return ExitCode.DECIDED if report.verified else ExitCode.CHAIN_INCOMPLETE
