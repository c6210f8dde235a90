"""``starter.py directory``: show and edit the support directory (tenants, people, their public keys,
each tenant's approval policy). People are data, not code: adding a reviewer or re-keying one is an
edit of ``<state dir>/keys/directory.json`` (or of the file ``SUPPORT_DIRECTORY`` names), which the
worker and the commerce server read again on their next check, without a restart.

This module needs nothing of the profile machinery: each command reads the state dir from the main
callback's settings (``ctx.obj.state_dir``) and acts on the directory there. A reviewer's demo key
pair is created in the state dir; only its public half goes into the directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, Protocol, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.exit_codes import ExitCode
from contracts.action_policy import ActionKind, ActionRule
from contracts.directory import Directory, Tenant
from contracts.errors import SupportError
from contracts.identity import Role
from keystore import create_key_pair, directory_location, private_key_path, reviewer_kid
from keystore.directory_edit import (
    DirectoryEditError,
    add_person,
    add_tenant,
    keyed_person,
    remove_person,
    rotate_key,
    set_policy,
)
from keystore.directory_file import load_directory, write_directory
from keystore.enrollment import ENROLLMENT_TTL_SECONDS, console_origin, mint_enrollment_link

directory_app = typer.Typer(
    no_args_is_help=True,
    help="The support directory: tenants, people, their public keys and each tenant's approval policy.",
)
Edited = TypeVar("Edited")
MAX_GENERATIONS = 1000
"""How far a fresh key's generation is searched past the person's newest one."""


class _HasStateDir(Protocol):
    state_dir: Path


def refuse(problem: str) -> NoReturn:
    typer.echo(f"directory: {problem}", err=True)
    raise typer.Exit(ExitCode.REFUSED)


def _state_dir(ctx: typer.Context) -> Path:
    settings: _HasStateDir = ctx.obj
    return Path(settings.state_dir)


def _load(location: str) -> Directory:
    try:
        return load_directory(location)
    except SupportError as error:
        refuse(error.message)


def editable(ctx: typer.Context) -> tuple[Path, Directory]:
    """The directory file of this state dir (or ``SUPPORT_DIRECTORY``) and what it holds now."""
    location = directory_location(_state_dir(ctx))
    if re.match(r"^[a-z][a-z0-9+.-]*://", location, re.IGNORECASE):
        refuse(f"{location} is published at a URL; edit the document where it is published")
    return Path(location), _load(location)


def edited_or_refused(edit: Callable[[], Edited]) -> Edited:
    try:
        return edit()
    except DirectoryEditError as error:
        refuse(str(error))


def _fresh_key(state_dir: Path, directory: Directory, subject: str, generation: int) -> dict[str, Any]:
    """A newly created key pair for ``subject``, of ``generation`` or the first later one whose kid the
    directory does not hold and whose private key file does not exist yet: a key file left behind by a
    rotation or a removal is never published again."""
    for candidate in range(generation, generation + MAX_GENERATIONS):
        kid = reviewer_kid(subject, candidate)
        if directory.key(kid) is None and not private_key_path(state_dir, kid).exists():
            jwk, created = create_key_pair(state_dir, kid)
            if created:
                return jwk
    refuse(f"no free key name for {subject!r} after generation {generation}")


def _generation(subject: str, kid: str) -> int:
    """1 for ``reviewer:kai``, 3 for ``reviewer:kai:3``, 0 for a kid not named that way."""
    if kid == reviewer_kid(subject):
        return 1
    prefix = f"{reviewer_kid(subject)}:"
    rest = kid.removeprefix(prefix)
    return int(rest) if kid.startswith(prefix) and rest.isdigit() else 0


def policy_line(tenant: Tenant) -> str:
    threshold = tenant.approval.two_reviewers_from_cents
    rule = (
        "one reviewer approves every refund"
        if threshold is None
        else f"two distinct reviewers from {threshold} cents, one below"
    )
    return f"tenant {tenant.tenant} ({tenant.display_name}): {rule}"


def action_lines(tenant: Tenant) -> list[str]:
    """One line per action the tenant allows, or one saying it allows none."""
    if not tenant.actions:
        return [f"tenant {tenant.tenant}: no action allowed (default deny)"]
    return [f"tenant {tenant.tenant}: {rule_sentence(kind, rule)}" for kind, rule in tenant.actions.items()]


def rule_sentence(kind: ActionKind, rule: ActionRule) -> str:
    agree = []
    if rule.customer_confirms:
        agree.append("the customer confirms")
    if rule.reviewers:
        above = f" from {rule.reviewers_from_cents} cents" if rule.reviewers_from_cents else ""
        agree.append(f"{rule.reviewers} reviewer(s) approve{above}")
    caps = []
    if rule.max_per_customer_per_day is not None:
        caps.append(f"at most {rule.max_per_customer_per_day} a day per customer")
    if rule.max_cents_per_customer_per_30_days is not None:
        caps.append(f"at most {rule.max_cents_per_customer_per_30_days} cents per customer in 30 days")
    who = " and ".join(agree) or "nobody is asked"
    limits = f"; {', '.join(caps)}" if caps else ""
    return f"{kind.value} allowed: {who}; proposals hold {rule.expires_minutes} minutes{limits}"


def directory_table(directory: Directory, location: str) -> Table:
    table = Table(title=f"support directory ({location})")
    for column in ("tenant", "subject", "role", "name", "kids"):
        table.add_column(column, overflow="fold")
    for person in directory.people:
        cells = (person.tenant, person.subject, person.role.value, person.display_name, ", ".join(person.kids) or "-")
        table.add_row(*(Text(cell) for cell in cells))
    return table


@directory_app.command("show")
def show(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the directory document itself.")] = False,
) -> None:
    """List the tenants' people and their key ids, and each tenant's approval policy."""
    location = directory_location(_state_dir(ctx))
    directory = _load(location)
    if as_json:
        typer.echo(directory.model_dump_json(indent=2))
        return
    console = Console(markup=False, emoji=False, highlight=False)
    console.print(directory_table(directory, location))
    for tenant in directory.tenants:
        typer.echo(policy_line(tenant))
        for line in action_lines(tenant):
            typer.echo(line)


@directory_app.command("add-tenant")
def add_tenant_command(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Argument(help="Tenant id: lower-case letters, digits, '.', '_' or '-'.")],
    name: Annotated[str | None, typer.Option("--name", help="Display name (default: the tenant id).")] = None,
    policies: Annotated[
        str | None,
        typer.Option("--policies", help="Follow this tenant's policy documents and refund rule (e.g. qinghe)."),
    ] = None,
) -> None:
    """Add a tenant (one reviewer approves every refund until set-policy says otherwise)."""
    path, directory = editable(ctx)
    write_directory(path, edited_or_refused(lambda: add_tenant(directory, tenant, name, policies)))
    follows = f", following {policies}'s policies" if policies else ""
    typer.echo(f"added tenant {tenant}{follows} (directory {path})")


@directory_app.command("add-person")
def add_person_command(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Subject: lower-case letters, digits, '.', '_' or '-'.")],
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant the person belongs to (only that one).")],
    role: Annotated[Role, typer.Option("--role", help="customer or reviewer.")],
    name: Annotated[str | None, typer.Option("--name", help="Display name (default: the subject).")] = None,
) -> None:
    """Add a customer or a reviewer. A reviewer gets a demo key pair in the state dir (private key 0600)
    and the directory publishes its public key. A customer gets no key: customers are vouched for by
    the issuer's applicant tokens."""
    path, directory = editable(ctx)
    display_name = name or subject
    edited_or_refused(lambda: add_person(directory, subject, tenant, role, display_name))  # refused before any key file
    jwk = _fresh_key(_state_dir(ctx), directory, subject, 1) if role is Role.REVIEWER else None
    write_directory(path, edited_or_refused(lambda: add_person(directory, subject, tenant, role, display_name, jwk)))
    key = f"key {jwk['kid']}" if jwk is not None else "no key (applicant tokens vouch for customers)"
    typer.echo(f"added {role.value} {subject} to tenant {tenant}, {key} (directory {path})")


@directory_app.command("set-policy")
def set_policy_command(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Argument(help="Tenant id.")],
    two_reviewers_from: Annotated[
        int | None,
        typer.Option("--two-reviewers-from", min=1, help="Refunds of this many cents or more need two reviewers."),
    ] = None,
    one_reviewer: Annotated[bool, typer.Option("--one-reviewer", help="One reviewer approves every refund.")] = False,
) -> None:
    """Set how many distinct reviewers of the tenant must approve a refund."""
    if (two_reviewers_from is not None) == one_reviewer:
        refuse("give exactly one of --two-reviewers-from CENTS and --one-reviewer")
    path, directory = editable(ctx)
    edited = edited_or_refused(lambda: set_policy(directory, tenant, two_reviewers_from))
    write_directory(path, edited)
    entry = edited.tenant(tenant)
    assert entry is not None  # set_policy refuses an unknown tenant
    typer.echo(f"set policy: {policy_line(entry)} (directory {path})")


@directory_app.command("rotate-key")
def rotate_key_command(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="The reviewer whose key is replaced.")],
) -> None:
    """Give a reviewer a new key and remove every old one from the directory at once (no grace period).
    The old private key file stays in the state dir, but approvals signed with it no longer verify."""
    path, directory = editable(ctx)
    person = edited_or_refused(lambda: keyed_person(directory, subject))
    newest = max(_generation(subject, kid) for kid in person.kids)
    jwk = _fresh_key(_state_dir(ctx), directory, subject, newest + 1)
    write_directory(path, edited_or_refused(lambda: rotate_key(directory, subject, jwk)))
    old = ", ".join(person.kids)
    typer.echo(
        f"rotated {subject}'s key to {jwk['kid']}; {old} no longer verifies (its private key file is left in "
        f"place) (directory {path})"
    )


@directory_app.command("remove-person")
def remove_person_command(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="The person to remove, with their public keys.")],
) -> None:
    """Remove a person and their public keys (their approvals no longer verify)."""
    path, directory = editable(ctx)
    write_directory(path, edited_or_refused(lambda: remove_person(directory, subject)))
    person = directory.person(subject)
    assert person is not None  # remove_person refuses an unknown subject
    keys = f" and key {', '.join(person.kids)}" if person.kids else ""
    typer.echo(f"removed {person.role.value} {subject}{keys} from tenant {person.tenant} (directory {path})")


@directory_app.command("enroll")
def enroll_command(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="The reviewer who enrolls a passkey.")],
    console_url: Annotated[
        str | None,
        typer.Option(
            "--console",
            help="The reviewer console's address (its origin); default CONSOLE_ORIGIN, else "
            "http://localhost:CONSOLE_PORT, else http://localhost:8090.",
        ),
    ] = None,
) -> None:
    """Print a one-time link (signed by the issuer, valid 15 minutes, used once, in the first browser that
    opens it) with which the reviewer registers a passkey in the reviewer console; the console publishes
    its public key in the directory. The link carries its token after ``#``, which browsers never send,
    so no log on the way records it."""
    state_dir = _state_dir(ctx)
    _load(directory_location(state_dir))  # a missing or invalid directory is said as such
    try:
        origin = console_url or console_origin(os.environ)
        link = mint_enrollment_link(state_dir, subject, console_url=origin, now=datetime.now(UTC))
    except SupportError as error:
        refuse(error.message)
    typer.echo(link)
    typer.echo(
        f"valid {ENROLLMENT_TTL_SECONDS // 60} minutes, once, in the first browser that opens it, for {subject}",
        err=True,
    )
