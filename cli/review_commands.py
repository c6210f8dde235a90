"""A reviewer's commands: ``review`` signs a decision with the reviewer's own key and sends it by update;
``review-info`` shows the proposal and, with ``--approve`` or ``--reject``, prints a freshly signed
token in the forms the Temporal CLI and the Web UI take. Registered on :data:`cli.app.app` when imported.

The reviewer's private key is read from the state dir (``keys/reviewer-<profile>.pem``, made by
``starter.py init`` for the demo); it never leaves this process. A token is a short-lived credential
meant to be pasted: only ``review-info`` prints one.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from typing import Annotated

import typer

from case_client import CaseClient, ClientErrorCode, TemporalTarget, workflow_id
from cli.app import WAIT_SECONDS, app, settings_of
from cli.codes import CliErrorCode
from cli.exit_codes import exit_code_for
from cli.following import Followed, case_goes_on, read_with_progress, saying_on_interrupt, settle_with_progress
from cli.render import console, print_case_card, show_case, signed_review_forms, starter_command
from contracts.approval_claims import CredentialCode
from contracts.case import CaseStatus, CaseView, Decision
from contracts.credentials import APPROVAL_TOKEN_TTL
from contracts.errors import AuthorizationError, BusinessError, ContractError, TransientError
from contracts.identity import Identity, Role
from contracts.names import case_id_of
from keystore.signers import KeyFileSigner

DIGEST = re.compile(r"[0-9a-f]{64}")


def chosen_decision(approve: bool, reject: bool, *, required: bool) -> Decision | None:
    """``--approve`` or ``--reject`` (exactly one when ``required``, at most one otherwise)."""
    if (approve and reject) or (required and not (approve or reject)):
        raise ContractError(CliErrorCode.INVALID_ARGUMENTS, "give exactly one of --approve or --reject")
    if approve:
        return Decision.APPROVE
    return Decision.REJECT if reject else None


def refuse_swallowed_flag(digest: str) -> None:
    """``--digest --approve`` reads ``--approve`` as the digest: the problem to name is then the missing
    digest, not a missing decision (checked before the decision for that reason)."""
    if digest.startswith("-"):
        raise ContractError(
            CliErrorCode.DIGEST_MISSING,
            f"--digest has no value ({digest} was read as the digest): give the 64 hexadecimal digits "
            "review-info shows, e.g. review CASE --digest DIGEST --approve",
        )


def require_reviewer(identity: Identity) -> Identity:
    """Only a reviewer holds a key that signs approvals; anyone else is told so before anything is sent."""
    if identity.role is not Role.REVIEWER:
        raise AuthorizationError(
            CredentialCode.NOT_A_REVIEWER,
            f"profile {identity.subject} is a {identity.role.value} and holds no reviewer key; an approval is "
            "signed with a reviewer's own key (e.g. --profile chen)",
        )
    return identity


@app.command()
def review(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    digest: Annotated[str, typer.Option(help="The proposal digest shown by ask and review-info.")],
    approve: Annotated[bool, typer.Option("--approve", help="Approve the proposal.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject the proposal.")] = False,
) -> None:
    """Approve or reject a waiting proposal, signed with the --profile reviewer's own key (a Temporal update)."""
    refuse_swallowed_flag(digest)
    decision = chosen_decision(approve, reject, required=True)
    assert decision is not None
    if not DIGEST.fullmatch(digest):
        raise ContractError(
            CliErrorCode.INVALID_DIGEST, "--digest must be the 64 hexadecimal digits shown by review-info"
        )
    settings = settings_of(ctx)
    reviewer = require_reviewer(settings.identity)
    plain_id = case_id_of(workflow_id(case_id))
    signed = KeyFileSigner(settings.state_dir).signed_review(
        reviewer, case_id=plain_id, digest=digest, decision=decision.value
    )
    target = TemporalTarget.from_env()

    starter = starter_command(settings.state_dir, reviewer.subject)

    async def run() -> CaseView:
        case = (await CaseClient.connect(target)).open(plain_id)
        # The same answer as review-info for a case this profile may not see: it may not exist either.
        await read_with_progress(case, settings.identity, settings.state_dir)
        outcome = await case.review(signed)
        console.print(f"review accepted: {outcome.reason} (signed by {reviewer.subject})")
        try:  # the decision is taken: Ctrl-C or a wait that runs out leaves the case going on
            view = await saying_on_interrupt(
                Followed(plain_id, started=True),
                starter,
                lambda: settle_with_progress(
                    case, plain_id, settings.identity, settings.state_dir, timeout=WAIT_SECONDS
                ),
            )
        except TransientError as error:
            raise TransientError(
                error.code, f"{error.message}. {case_goes_on(plain_id, starter, error, queued=False)}"
            ) from None
        print_case_card(view)
        return view

    raise typer.Exit(exit_code_for(asyncio.run(run()).status))


@app.command("review-info")
def review_info(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(help="Case id.")],
    approve: Annotated[
        bool, typer.Option("--approve", help="Also print a signed approval for the Temporal CLI and the Web UI.")
    ] = False,
    reject: Annotated[
        bool, typer.Option("--reject", help="Also print a signed rejection for the Temporal CLI and the Web UI.")
    ] = False,
) -> None:
    """Show the exact proposal a reviewer decides, with its digest; with --approve or --reject, also the
    ready-to-run Temporal CLI commands and the Web UI input, carrying a token signed by this reviewer
    (valid 10 minutes, accepted once)."""
    decision = chosen_decision(approve, reject, required=False)
    settings = settings_of(ctx)
    if decision is not None:
        require_reviewer(settings.identity)
    target = TemporalTarget.from_env()

    async def run() -> CaseView:
        cases = await CaseClient.connect(target)
        return await read_with_progress(cases.open(case_id), settings.identity, settings.state_dir)

    view = asyncio.run(run())
    if decision is None:
        show_case(view, settings.state_dir, for_customer=False)
        return
    if view.status is not CaseStatus.WAITING_APPROVAL or view.digest is None:
        raise BusinessError(
            ClientErrorCode.CASE_NOT_WAITING,
            f"case {view.case_id} is {view.status.value}: there is no proposal to sign",
        )
    now = datetime.fromtimestamp(int(datetime.now(UTC).timestamp()), UTC)  # a token's times are whole seconds
    token = KeyFileSigner(settings.state_dir).approval_token(
        settings.identity, case_id=view.case_id, digest=view.digest, decision=decision.value, now=now
    )
    show_case(view, settings.state_dir, with_review_commands=False, for_customer=False)
    forms = signed_review_forms(
        view,
        target,
        reviewer=settings.identity.subject,
        decision=decision,
        token=token,
        valid_until=now + APPROVAL_TOKEN_TTL,
    )
    for line in forms:
        print(line)  # plain print: a command or a token is copied whole, never wrapped
