"""``starter.py audit CASE [--json] [--history FILE]``: the whole case as its workflow history tells it
(:mod:`case_history.audit`), for an auditor with no worker, no commerce database and no keys.
Registered on :data:`cli.app.app` when imported.

The history is fetched from Temporal (the latest run of the case, and for its conversation every run it
continued from; the same access rule as ``verify``) or read from a file exported with ``temporal
workflow show --output json``. Nothing is verified: tokens are shown as the claims they make (a
message's token as its fingerprint); ``starter.py verify`` checks the signatures. Exit 0 once the
audit is printed; a history that cannot be read or is another case's is one line on stderr, exit 2.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from case_client import CASE_NOT_ACCESSIBLE, ClientErrorCode, TemporalTarget, workflow_id
from case_history.audit import CaseAudit, audit_from_history
from case_history.conversation import run_conversation, whole_conversation
from case_history.trail import HistoryErrorCode, history_from_file
from cli.app import app, settings_of
from cli.audit_json import audit_json
from cli.audit_render import audit_lines
from cli.codes import CliErrorCode
from cli.exit_codes import ExitCode
from cli.verify_command import fetch_runs, may_verify
from contracts.errors import AuthorizationError, ContractError
from contracts.names import case_id_of


def read_audit(ctx: typer.Context, case_id: str, history: Path | None) -> tuple[CaseAudit, str]:
    """The case's audit and where its history came from (a file, or Temporal after the access check)."""
    if history is not None:
        case_audit = audit_from_history(history_from_file(history, workflow_id(case_id)))
        if case_audit.trail.started_at is None:
            raise ContractError(
                HistoryErrorCode.HISTORY_UNREADABLE, f"{history} holds no workflow start event: not a case's history"
            )
        recorded = case_audit.trail.case.value
        if recorded is not None and recorded.case_id != case_id:
            message = f"the history file {history} is of case {recorded.case_id}, not {case_id}"
            raise ContractError(CliErrorCode.HISTORY_OF_ANOTHER_CASE, message)
        return case_audit, f"the history file {history}"
    settings = settings_of(ctx)
    target = TemporalTarget.from_env()
    histories = asyncio.run(fetch_runs(target, case_id))
    case_audit = audit_from_history(histories[-1])
    if not may_verify(case_audit.trail, settings.identity):
        raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE)
    if len(histories) > 1:  # the conversation of every run: a run carries only the latest entries
        case_audit = replace(case_audit, conversation=whole_conversation(list(map(run_conversation, histories))))
    return case_audit, f"the workflow history on {target.address} (namespace {target.namespace})"


@app.command()
def audit(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object instead of text.")] = False,
    history: Annotated[
        Path | None,
        typer.Option(help="A history exported by `temporal workflow show --output json` instead of Temporal's."),
    ] = None,
) -> None:
    """The whole case from its workflow history alone: who asked what, model requests, tool calls,
    evidence, proposal and digest, review attempts, settlement and receipt, what the customer was told
    (nothing is verified here: `starter.py verify` checks the signatures)."""
    plain_id = case_id_of(workflow_id(case_id))
    case_audit, source = read_audit(ctx, plain_id, history)
    if as_json:
        print(json.dumps(audit_json(case_audit, source), indent=2))
    else:
        for line in audit_lines(case_audit, source):
            print(line)  # plain print: nothing from the history is read as markup
    raise typer.Exit(ExitCode.DECIDED)
