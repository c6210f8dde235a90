"""Mutations: from each task's gold writes, variants that break the policy, each sent to our retail server
over MCP stdio; every one must be refused by a deterministic check (the server's rules, its identity
binding, the agreement check) with nothing written.

The gold writes run in order as in the faithfulness check, so each write's variants meet the state its
gold call met; a variant is tried just before its gold write, and "a second change" just after it.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from contracts.retail import RetailTool, RetailWrite
from retail_server import tau2_format as t2
from retail_server.db import DOMAIN_MODELS
from tau2_eval.world import Prepared, RetailSession, World, answer_of, customer_of, refusal_code, retail_session


class MutationKind(StrEnum):
    OTHER_CUSTOMERS_ORDER = "another customer's order"
    OTHER_CUSTOMERS_PAYMENT_METHOD = "another customer's payment method"
    OTHER_PRODUCTS_ITEM = "an item of another product"
    WRONG_STATUS = "an order in the wrong status"
    SECOND_CHANGE = "a second item change or exchange"
    CHANGED_AFTER_CONFIRMATION = "changed after the customer confirmed"
    NO_CONFIRMATION = "no confirmation"


@dataclass(frozen=True)
class Outcome:
    task_id: str
    kind: MutationKind
    tool: str
    refused: bool
    code: str
    unchanged: bool
    """The domain's records were byte for byte what they were before the variant was sent."""

    @property
    def held(self) -> bool:
        return self.refused and self.unchanged


def domain_digest(database: Path) -> str:
    """SHA-256 of every row of the domain's tables (proposals aside), read straight from SQLite."""
    digest = hashlib.sha256()
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        for model in DOMAIN_MODELS:
            table = model.__tablename__
            for row in connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
                digest.update(repr(row).encode())
    return digest.hexdigest()


REQUIRED_STATUS = {
    RetailWrite.CANCEL_PENDING_ORDER: "pending",
    RetailWrite.MODIFY_PENDING_ORDER_ADDRESS: "pending",
    RetailWrite.MODIFY_PENDING_ORDER_ITEMS: "pending",
    RetailWrite.MODIFY_PENDING_ORDER_PAYMENT: "pending",
    RetailWrite.RETURN_DELIVERED_ORDER_ITEMS: "delivered",
    RetailWrite.EXCHANGE_DELIVERED_ORDER_ITEMS: "delivered",
}
CHANGES_ONCE = (RetailWrite.MODIFY_PENDING_ORDER_ITEMS, RetailWrite.EXCHANGE_DELIVERED_ORDER_ITEMS)


class Variants:
    """The policy-breaking variants of one gold write, chosen deterministically from the loaded domain."""

    def __init__(self, data: t2.RetailDatabase, customer: str) -> None:
        self._data = data
        self._customer = customer

    def breaking(self, write: RetailWrite, arguments: dict[str, Any]) -> Iterator[tuple[MutationKind, dict[str, Any]]]:
        order = self._data.orders.get(arguments.get("order_id", ""))
        if order is not None:
            other = self._others_order(order.status)
            if other is not None:
                yield MutationKind.OTHER_CUSTOMERS_ORDER, {**arguments, "order_id": other}
            wrong = self._own_order_not(REQUIRED_STATUS[write])
            if wrong is not None:
                yield MutationKind.WRONG_STATUS, {**arguments, "order_id": wrong}
        if "payment_method_id" in arguments:
            method = self._others_payment_method()
            yield MutationKind.OTHER_CUSTOMERS_PAYMENT_METHOD, {**arguments, "payment_method_id": method}
        if arguments.get("new_item_ids") and order is not None:
            first = arguments["item_ids"][0]
            product = next(item.product_id for item in order.items if item.item_id == first)
            foreign = self._other_products_variant(product)
            yield (
                MutationKind.OTHER_PRODUCTS_ITEM,
                {**arguments, "new_item_ids": [foreign, *arguments["new_item_ids"][1:]]},
            )

    def changed(self, write: RetailWrite, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The same write with an amount, item, payment method or detail changed, itself within the policy
        where the domain offers one (None where it offers none)."""
        user = self._data.users[self._customer]
        methods = [m for m in user.payment_methods if m != arguments.get("payment_method_id")]
        if write is RetailWrite.CANCEL_PENDING_ORDER:
            reason = "ordered by mistake" if arguments["reason"] == "no longer needed" else "no longer needed"
            return {**arguments, "reason": reason}
        if "zip" in arguments:
            return {**arguments, "zip": "00000" if arguments["zip"] != "00000" else "00001"}
        if write is RetailWrite.RETURN_DELIVERED_ORDER_ITEMS and len(arguments["item_ids"]) > 1:
            return {**arguments, "item_ids": arguments["item_ids"][1:]}
        if "payment_method_id" in arguments and methods:
            return {**arguments, "payment_method_id": methods[0]}
        return None

    def _others_order(self, status: str) -> str | None:
        return next(
            (o.order_id for o in self._data.orders.values() if o.user_id != self._customer and o.status == status),
            None,
        )

    def _own_order_not(self, status: str) -> str | None:
        own = self._data.users[self._customer].orders
        return next((o for o in own if self._data.orders[o].status != status), None)

    def _others_payment_method(self) -> str:
        return next(
            method
            for user in self._data.users.values()
            if user.user_id != self._customer
            for method in user.payment_methods
        )

    def _other_products_variant(self, product_id: str) -> str:
        return next(
            variant.item_id
            for product in self._data.products.values()
            if product.product_id != product_id
            for variant in product.variants.values()
            if variant.available
        )


async def _refused(
    session: RetailSession, database: Path, task_id: str, kind: MutationKind, tool: str, send: Callable[[], Any]
) -> Outcome:
    before = domain_digest(database)
    result = await send()
    return Outcome(
        task_id=task_id,
        kind=kind,
        tool=tool,
        refused=bool(result.is_error),
        code=refusal_code(result) if result.is_error else "accepted",
        unchanged=domain_digest(database) == before,
    )


async def mutate_task(world: World, task: dict[str, Any], customer: str, work_dir: Path) -> list[Outcome]:
    """Every variant of ``task``'s gold writes, each before its gold write runs (confirmed, executed)."""
    task_id = str(task["id"])
    database = work_dir / f"mutations-{task_id}.db"
    shutil.copyfile(world.template, database)
    variants = Variants(world.data, customer)
    outcomes: list[Outcome] = []
    async with retail_session(world, database, customer, f"tau2-mutations-{task_id}") as session:
        for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
            write = RetailTool(action["name"]).write
            if write is None:
                continue
            arguments = dict(action.get("arguments") or {})
            outcomes += await _variants_of(session, database, task_id, variants, write, arguments)
            _, executed = await session.confirmed(write, arguments)
            if executed is not None and not executed.is_error and write in CHANGES_ONCE:
                again = lambda write=write, arguments=arguments: session.call(write, arguments)  # noqa: E731
                outcomes.append(await _refused(session, database, task_id, MutationKind.SECOND_CHANGE, write, again))
    database.unlink()
    return outcomes


async def _variants_of(
    session: RetailSession,
    database: Path,
    task_id: str,
    variants: Variants,
    write: RetailWrite,
    arguments: dict[str, Any],
) -> list[Outcome]:
    outcomes = []
    for kind, changed in variants.breaking(write, arguments):
        send = lambda changed=changed: session.call(write, changed)  # noqa: E731
        outcomes.append(await _refused(session, database, task_id, kind, write, send))
    proposed = await session.call(write, arguments)
    if proposed.is_error:
        return outcomes  # the gold write itself is refused here (as by τ²'s tool): nothing to confirm
    proposal = answer_of(proposed)
    unconfirmed = lambda: session.execute(proposal, confirmation=None)  # noqa: E731
    outcomes.append(await _refused(session, database, task_id, MutationKind.NO_CONFIRMATION, write, unconfirmed))
    other_arguments = variants.changed(write, arguments)
    if other_arguments is not None:
        confirmation = session.confirmation(proposal["digest"])
        other = await session.call(write, other_arguments)
        if not other.is_error:
            switched = lambda: session.execute(answer_of(other), confirmation=confirmation)  # noqa: E731
            kind = MutationKind.CHANGED_AFTER_CONFIRMATION
            outcomes.append(await _refused(session, database, task_id, kind, write, switched))
    return outcomes


async def mutate_tasks(prepared: Prepared, work_dir: Path, progress: Callable[[str], None] = print) -> list[Outcome]:
    """The variants of every prepared task's gold writes, each task for its own customer."""
    outcomes: list[Outcome] = []
    tasks = prepared.tasks
    for count, task in enumerate(tasks, start=1):
        task_id = str(task["id"])
        customer = customer_of(task_id, prepared.gold[task_id])
        outcomes += await mutate_task(prepared.world, task, customer, work_dir)
        if count % 10 == 0 or count == len(tasks):
            progress(f"tau2 mutations: {count} of {len(tasks)} tasks, {len(outcomes)} variants sent")
    return outcomes
