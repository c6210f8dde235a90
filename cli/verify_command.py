"""``starter.py verify CASE [--history FILE]``: the case's chain of proof, checked from its workflow history
and the public keys only (:mod:`case_client.verify`). Registered on :data:`cli.app.app` when imported.

The history is fetched from Temporal (the latest run of the case), or read from a file exported with
``temporal workflow show --output json``. The keys are ``SUPPORT_PUBLIC_KEYS`` or the state dir's
public key set, never the keys recorded in the history. Exit 0 when every link holds, 7 naming the
first broken link, 8 when the case has not reached a signed receipt (README: exit status).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from temporalio.client import WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

from case_client import CASE_NOT_ACCESSIBLE, CaseClient, TemporalTarget, workflow_id
from case_client.exit_codes import ExitCode
from case_client.render import chain_lines, errors
from case_client.trail import CaseTrail, history_from_file, trail_from_history
from case_client.verify import ChainReport, verify_chain
from cli.app import app, settings_of
from contracts.errors import AuthorizationError, TransientError
from contracts.identity import Identity, Role
from contracts.names import case_id_of
from keystore import load_public_keys, public_keys_location


def may_verify(trail: CaseTrail, identity: Identity) -> bool:
    """Read from Temporal, a case is verified by its applicant or a reviewer of its tenant (as ``status``)."""
    case = trail.case.value
    if case is None:
        return identity.role is Role.REVIEWER
    applicant = case.applicant
    return identity.subject == applicant.subject or (
        identity.role is Role.REVIEWER and identity.tenant == applicant.tenant
    )


async def fetch_history(target: TemporalTarget, case_id: str) -> WorkflowHistory:
    """The latest run's history of the case; a missing case is ``case_not_accessible``."""
    cases = await CaseClient.connect(target)
    try:
        return await cases.temporal.get_workflow_handle(workflow_id(case_id)).fetch_history()
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError("case_not_accessible", CASE_NOT_ACCESSIBLE) from None
        message = f"cannot fetch the history of case {case_id}: {error.message}"
        raise TransientError("temporal_unavailable", message) from None


def exit_code_of(report: ChainReport) -> ExitCode:
    if report.first_broken is not None:
        return ExitCode.CHAIN_BROKEN
    return ExitCode.DECIDED if report.verified else ExitCode.CHAIN_INCOMPLETE


@app.command()
def verify(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    history: Annotated[
        Path | None,
        typer.Option(help="A history exported by `temporal workflow show --output json` instead of Temporal's."),
    ] = None,
) -> None:
    """Check the case's chain offline: applicant token -> proposal digest -> approval token -> receipt
    (exit 0: all hold; 7: a link is broken; 8: the case has not reached a signed receipt)."""
    settings = settings_of(ctx)
    plain_id = case_id_of(workflow_id(case_id))
    location = public_keys_location(settings.state_dir)
    keys = load_public_keys(location)
    if history is not None:
        trail = trail_from_history(history_from_file(history, workflow_id(plain_id)))
        source = f"the history file {history}"
    else:
        target = TemporalTarget.from_env()
        trail = trail_from_history(asyncio.run(fetch_history(target, plain_id)))
        if not may_verify(trail, settings.identity):
            raise AuthorizationError("case_not_accessible", CASE_NOT_ACCESSIBLE)
        source = f"the workflow history on {target.address} (namespace {target.namespace})"
    report = verify_chain(trail, keys, case_id=plain_id)
    for line in chain_lines(report, source, location):
        print(line)  # plain print: nothing from the history is read as markup
    broken = report.first_broken
    if broken is not None:
        errors.print(f"error: chain_broken: the {broken.name} link is broken: {broken.detail}")
    elif report.verified:
        print("chain verified: applicant token -> proposal digest -> approval token -> receipt")
    else:
        print(f"chain incomplete: {', '.join(link.name for link in report.absent)} absent; what is there holds")
    raise typer.Exit(exit_code_of(report))
