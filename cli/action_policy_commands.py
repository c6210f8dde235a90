"""``starter.py directory allow-action`` and ``deny-action``: which writes a tenant allows, and who must
agree to each; ``escalate``: who is asked when a proposal nears its expiry undecided. Policy is data: the
edit goes into the directory, which the commerce server reads again before every preview and execution.
An action no rule names is denied (default deny)."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import ValidationError

from cli.directory_commands import directory_app, editable, edited_or_refused, refuse, rule_sentence
from contracts.action_policy import MAX_PROPOSAL_MINUTES, ActionKind, ActionRule
from keystore.directory_edit import set_action, set_escalation
from keystore.directory_file import first_problem, write_directory


@directory_app.command("allow-action")
def allow_action_command(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Argument(help="Tenant id.")],
    kind: Annotated[ActionKind, typer.Argument(help="The action the tenant allows.")],
    customer_confirms: Annotated[
        bool, typer.Option("--customer-confirms/--no-customer-confirms", help="The customer confirms each one.")
    ] = True,
    reviewers: Annotated[int, typer.Option("--reviewers", min=0, max=2, help="Distinct reviewers who approve.")] = 1,
    reviewers_from: Annotated[
        int, typer.Option("--reviewers-from", min=0, help="Reviewers approve actions moving this many cents or more.")
    ] = 0,
    max_per_day: Annotated[
        int | None, typer.Option("--max-per-day", min=1, help="At most this many per customer in 24 hours.")
    ] = None,
    max_cents_per_30_days: Annotated[
        int | None,
        typer.Option("--max-cents-per-30-days", min=1, help="At most this many cents per customer in 30 days."),
    ] = None,
    expires_minutes: Annotated[
        int, typer.Option("--expires-minutes", min=1, max=MAX_PROPOSAL_MINUTES, help="How long a proposal holds.")
    ] = 30,
) -> None:
    """Allow an action in a tenant, and say who must agree to it and its caps."""
    try:
        rule = ActionRule(
            customer_confirms=customer_confirms,
            reviewers=reviewers,
            reviewers_from_cents=reviewers_from,
            max_per_customer_per_day=max_per_day,
            max_cents_per_customer_per_30_days=max_cents_per_30_days,
            expires_minutes=expires_minutes,
        )
    except ValidationError as error:
        refuse(first_problem(error))
    path, directory = editable(ctx)
    write_directory(path, edited_or_refused(lambda: set_action(directory, tenant, kind, rule)))
    typer.echo(f"tenant {tenant}: {rule_sentence(kind, rule)} (directory {path})")


@directory_app.command("deny-action")
def deny_action_command(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Argument(help="Tenant id.")],
    kind: Annotated[ActionKind, typer.Argument(help="The action the tenant no longer allows.")],
) -> None:
    """Deny an action in a tenant again (as every action no rule names is)."""
    path, directory = editable(ctx)
    write_directory(path, edited_or_refused(lambda: set_action(directory, tenant, kind, None)))
    typer.echo(f"tenant {tenant}: {kind.value} denied (directory {path})")


@directory_app.command("escalate")
def escalate_command(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Argument(help="Tenant id.")],
    reviewer: Annotated[
        str | None, typer.Argument(help="A reviewer of the tenant; leave out with --nobody.", show_default=False)
    ] = None,
    nobody: Annotated[bool, typer.Option("--nobody", help="Ask nobody as proposals near their expiry.")] = False,
) -> None:
    """Name the reviewer a case asks to decide a proposal nobody has agreed to as it nears its expiry (when 5
    minutes, or a third of its time, are left), or --nobody."""
    if (reviewer is None) == (not nobody):
        refuse("name one reviewer of the tenant, or --nobody")
    path, directory = editable(ctx)
    write_directory(path, edited_or_refused(lambda: set_escalation(directory, tenant, reviewer)))
    asked = f"{reviewer} is asked to decide proposals nearing their expiry" if reviewer else "nobody is asked"
    typer.echo(f"tenant {tenant}: {asked} (directory {path})")
