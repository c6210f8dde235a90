"""Commands that need no Temporal server: set up the local state, talk to the commerce MCP server,
quote a refund, open a ticket, evaluate retrieval. Registered on :data:`cli.app.app` when imported."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cli.app import app, eval_app, settings_of
from cli.render import console, grid, mcp_table, quote_table


@app.command()
def init(ctx: typer.Context) -> None:
    """Create the commerce database, missing fixture rows, the demo directory and missing demo keys
    (never resets anything: a directory that exists keeps the people added to it)."""
    from commerce_server import database_url, make_engine, seed_fixture
    from keystore import create_demo_directory, directory_location, keys_dir

    settings = settings_of(ctx)
    report = seed_fixture(make_engine(database_url(settings.state_dir)))
    # soft_wrap: a line holding a path is never broken inside it (the terminal wraps it, copy and paste keep it)
    console.print(
        f"commerce database ready under {settings.state_dir} (fictional data): {report.sentence()}", soft_wrap=True
    )
    created = create_demo_directory(settings.state_dir)
    console.print(
        f"demo keys in {keys_dir(settings.state_dir)}: created {', '.join(created) or 'none (all exist)'}",
        soft_wrap=True,
    )
    console.print(
        f"directory (tenants, people, public keys): {directory_location(settings.state_dir, {})}", soft_wrap=True
    )


@app.command("mcp-tools")
def mcp_tools(ctx: typer.Context) -> None:
    """List the commerce MCP server's tools and resources, over a real stdio session."""
    from activities import open_stdio_client

    settings = settings_of(ctx)

    async def run() -> None:
        async with open_stdio_client(settings.identity.subject, settings.state_dir) as client:
            tools = await client.list_tools()
            resources = await client.list_resources()
        console.print(mcp_table(settings.identity.subject, tools, resources))

    asyncio.run(run())


@app.command()
def quote(ctx: typer.Context, order_id: Annotated[str, typer.Argument(help="Order id, e.g. QH-1001.")]) -> None:
    """Quote the automatic refund for one of your orders: order read through MCP, rule applied here."""
    from activities import open_stdio_client
    from contracts.commerce import Order
    from contracts.tools import ToolName
    from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
    from knowledge.store import default_knowledge_base

    settings = settings_of(ctx)

    async def run() -> None:
        async with open_stdio_client(settings.identity.subject, settings.state_dir) as client:
            order = Order.model_validate(await client.call(ToolName.GET_ORDER, {"order_id": order_id}))
        versions = policy_page_versions(default_knowledge_base())
        console.print(quote_table(calculate_refund_quote(order, page_versions=versions)))

    asyncio.run(run())


@app.command("create-ticket")
def create_ticket(
    ctx: typer.Context,
    order_id: Annotated[str, typer.Argument(help="Order id, e.g. QH-1005.")],
    text: Annotated[str, typer.Argument(help="What the ticket is about.")],
    key: Annotated[str, typer.Option("--key", help="Idempotency key: the same key returns the same ticket.")],
) -> None:
    """Open a support ticket on one of your orders (idempotent by --key)."""
    from activities import open_stdio_client
    from contracts.tools import ToolName

    settings = settings_of(ctx)

    async def run() -> None:
        async with open_stdio_client(settings.identity.subject, settings.state_dir) as client:
            arguments = {"order_id": order_id, "text": text, "idempotency_key": key}
            ticket = await client.call(ToolName.CREATE_TICKET, arguments)
        console.print(f"ticket {ticket['ticket_id']} on {ticket['order_id']} (key {ticket['idempotency_key']})")

    asyncio.run(run())


@eval_app.command("retrieval")
def eval_retrieval() -> None:
    """Recall@4, MRR and abstention of BM25 retrieval on the labelled questions (both languages)."""
    from knowledge.retrieval_eval import retrieval_eval_rows, run_retrieval_eval
    from knowledge.store import default_knowledge_base

    report = run_retrieval_eval(default_knowledge_base())
    console.print(grid("retrieval evaluation (BM25, tenant qinghe, as of 2026-09-12)", retrieval_eval_rows(report)))
