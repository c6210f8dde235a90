"""The retail records between the database and τ²-bench's format: a whole database loaded into the
tables, one order, customer or product read back as the domain's tools answer, the whole database
exported for the domain's hash."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import Engine, func
from sqlmodel import Session, SQLModel, col, select

from contracts.retail import RetailAddress
from retail_server import tau2_format as t2
from retail_server.db import (
    DOMAIN_MODELS,
    RetailFulfillmentRow,
    RetailOrderItemRow,
    RetailOrderRow,
    RetailPaymentMethodRow,
    RetailPaymentRow,
    RetailProductRow,
    RetailUserRow,
    RetailVariantRow,
)
from retail_server.tau2_format import cents, dollars


class LoadError(ValueError):
    """A database that cannot be loaded; the message says why in one sentence."""


def _address(row: RetailUserRow | RetailOrderRow) -> RetailAddress:
    return RetailAddress(
        address1=row.address1, address2=row.address2, city=row.city, country=row.country, state=row.state, zip=row.zip
    )


def _list(text: str | None) -> list[str] | None:
    return None if text is None else list(json.loads(text))


def _json(values: Iterable[str] | None) -> str | None:
    return None if values is None else json.dumps(list(values))


def is_loaded(engine: Engine) -> bool:
    with Session(engine) as session:
        return bool(session.exec(select(func.count()).select_from(RetailProductRow)).one())


def customer_names(engine: Engine) -> list[tuple[str, str]]:
    """Every customer's user id and full name, in the domain's order (what the directory enrols)."""
    with Session(engine) as session:
        users = session.exec(select(RetailUserRow).order_by(col(RetailUserRow.position)))
        return [(user.user_id, f"{user.first_name} {user.last_name}") for user in users]


def load_database(engine: Engine, data: t2.RetailDatabase) -> None:
    """Write ``data`` into empty tables in one transaction; refused when a catalogue is loaded already."""
    if is_loaded(engine):
        raise LoadError("The retail database holds a catalogue already: load into a new database.")
    owner_of: dict[str, tuple[str, int]] = {}
    for user in data.users.values():
        for place, order_id in enumerate(user.orders):
            owner_of[order_id] = (user.user_id, place)
    rows: list[SQLModel] = []
    for position, product in enumerate(data.products.values()):
        rows.append(RetailProductRow(product_id=product.product_id, name=product.name, position=position))
        for place, variant in enumerate(product.variants.values()):
            rows.append(
                RetailVariantRow(
                    item_id=variant.item_id,
                    product_id=product.product_id,
                    options_json=json.dumps(variant.options),
                    available=variant.available,
                    price_cents=cents(variant.price),
                    position=place,
                )
            )
    for position, user in enumerate(data.users.values()):
        rows.append(
            RetailUserRow(
                user_id=user.user_id,
                first_name=user.name.first_name,
                last_name=user.name.last_name,
                email=user.email,
                position=position,
                address1=user.address.address1,
                address2=user.address.address2,
                city=user.address.city,
                country=user.address.country,
                state=user.address.state,
                zip=user.address.zip,
            )
        )
        for place, method in enumerate(user.payment_methods.values()):
            rows.append(
                RetailPaymentMethodRow(
                    user_id=user.user_id,
                    payment_method_id=method.id,
                    source=method.source,
                    brand=method.brand,
                    last_four=method.last_four,
                    balance_cents=None if method.balance is None else cents(method.balance),
                    position=place,
                )
            )
    for position, order in enumerate(data.orders.values()):
        if owner_of.get(order.order_id, (order.user_id,))[0] != order.user_id:
            raise LoadError(f"Order {order.order_id} is listed by a customer other than its own.")
        _, place = owner_of.get(order.order_id, (order.user_id, -1))
        rows.append(
            RetailOrderRow(
                order_id=order.order_id,
                user_id=order.user_id,
                user_position=place,
                status=order.status,
                cancel_reason=order.cancel_reason,
                exchange_items_json=_json(order.exchange_items),
                exchange_new_items_json=_json(order.exchange_new_items),
                exchange_payment_method_id=order.exchange_payment_method_id,
                exchange_price_difference_cents=(
                    None if order.exchange_price_difference is None else cents(order.exchange_price_difference)
                ),
                return_items_json=_json(order.return_items),
                return_payment_method_id=order.return_payment_method_id,
                position=position,
                address1=order.address.address1,
                address2=order.address.address2,
                city=order.address.city,
                country=order.address.country,
                state=order.address.state,
                zip=order.address.zip,
            )
        )
        for place, item in enumerate(order.items):
            rows.append(
                RetailOrderItemRow(
                    order_id=order.order_id,
                    position=place,
                    name=item.name,
                    product_id=item.product_id,
                    item_id=item.item_id,
                    price_cents=cents(item.price),
                    options_json=json.dumps(item.options),
                )
            )
        for place, fulfillment in enumerate(order.fulfillments):
            rows.append(
                RetailFulfillmentRow(
                    order_id=order.order_id,
                    position=place,
                    tracking_ids_json=json.dumps(fulfillment.tracking_id),
                    item_ids_json=json.dumps(fulfillment.item_ids),
                )
            )
        for place, payment in enumerate(order.payment_history):
            rows.append(
                RetailPaymentRow(
                    order_id=order.order_id,
                    position=place,
                    transaction_type=payment.transaction_type,
                    amount_cents=cents(payment.amount),
                    payment_method_id=payment.payment_method_id,
                )
            )
    with Session(engine) as session:
        for table in DOMAIN_MODELS:  # parents before children: the foreign keys hold at every insert
            session.add_all([row for row in rows if type(row) is table])
            session.flush()
        session.commit()


def order_record(
    row: RetailOrderRow,
    items: list[RetailOrderItemRow],
    fulfillments: list[RetailFulfillmentRow],
    payments: list[RetailPaymentRow],
) -> t2.Order:
    return t2.Order(
        order_id=row.order_id,
        user_id=row.user_id,
        address=_address(row),
        items=[
            t2.OrderItem(
                name=item.name,
                product_id=item.product_id,
                item_id=item.item_id,
                price=dollars(item.price_cents),
                options=json.loads(item.options_json),
            )
            for item in sorted(items, key=lambda item: item.position)
        ],
        status=row.status,
        fulfillments=[
            t2.Fulfillment(tracking_id=json.loads(f.tracking_ids_json), item_ids=json.loads(f.item_ids_json))
            for f in sorted(fulfillments, key=lambda f: f.position)
        ],
        payment_history=[
            t2.OrderPayment(
                transaction_type=p.transaction_type,  # type: ignore[arg-type]
                amount=dollars(p.amount_cents),
                payment_method_id=p.payment_method_id,
            )
            for p in sorted(payments, key=lambda p: p.position)
        ],
        cancel_reason=row.cancel_reason,
        exchange_items=_list(row.exchange_items_json),
        exchange_new_items=_list(row.exchange_new_items_json),
        exchange_payment_method_id=row.exchange_payment_method_id,
        exchange_price_difference=(
            None if row.exchange_price_difference_cents is None else dollars(row.exchange_price_difference_cents)
        ),
        return_items=_list(row.return_items_json),
        return_payment_method_id=row.return_payment_method_id,
    )


def payment_method_record(row: RetailPaymentMethodRow) -> t2.PaymentMethod:
    return t2.PaymentMethod(
        source=row.source,  # type: ignore[arg-type]
        id=row.payment_method_id,
        brand=row.brand,
        last_four=row.last_four,
        balance=None if row.balance_cents is None else dollars(row.balance_cents),
    )


def user_record(row: RetailUserRow, methods: list[RetailPaymentMethodRow], orders: list[RetailOrderRow]) -> t2.User:
    return t2.User(
        user_id=row.user_id,
        name=t2.Name(first_name=row.first_name, last_name=row.last_name),
        address=_address(row),
        email=row.email,
        payment_methods={m.payment_method_id: payment_method_record(m) for m in sorted(methods, key=_by_position)},
        orders=[o.order_id for o in sorted(orders, key=lambda o: o.user_position)],
    )


def _by_position(row: RetailPaymentMethodRow | RetailVariantRow) -> int:
    return row.position


def product_record(row: RetailProductRow, variants: list[RetailVariantRow]) -> t2.Product:
    return t2.Product(
        name=row.name,
        product_id=row.product_id,
        variants={
            v.item_id: t2.Variant(
                item_id=v.item_id,
                options=json.loads(v.options_json),
                available=v.available,
                price=dollars(v.price_cents),
            )
            for v in sorted(variants, key=_by_position)
        },
    )


def read_order(session: Session, order_id: str) -> t2.Order | None:
    row = session.get(RetailOrderRow, order_id)
    if row is None:
        return None
    items = list(session.exec(select(RetailOrderItemRow).where(RetailOrderItemRow.order_id == order_id)))
    fulfillments = list(session.exec(select(RetailFulfillmentRow).where(RetailFulfillmentRow.order_id == order_id)))
    payments = list(session.exec(select(RetailPaymentRow).where(RetailPaymentRow.order_id == order_id)))
    return order_record(row, items, fulfillments, payments)


def read_user(session: Session, user_id: str) -> t2.User | None:
    row = session.get(RetailUserRow, user_id)
    if row is None:
        return None
    methods = list(session.exec(select(RetailPaymentMethodRow).where(RetailPaymentMethodRow.user_id == user_id)))
    orders = list(session.exec(select(RetailOrderRow).where(RetailOrderRow.user_id == user_id)))
    return user_record(row, methods, orders)


def read_product(session: Session, product_id: str) -> t2.Product | None:
    row = session.get(RetailProductRow, product_id)
    if row is None:
        return None
    variants = list(session.exec(select(RetailVariantRow).where(RetailVariantRow.product_id == product_id)))
    return product_record(row, variants)


def export_database(engine: Engine) -> t2.RetailDatabase:
    """The whole domain as τ²-bench's file holds it (what its hash is computed over)."""
    with Session(engine) as session:
        variants: dict[str, list[RetailVariantRow]] = defaultdict(list)
        for variant in session.exec(select(RetailVariantRow)):
            variants[variant.product_id].append(variant)
        methods: dict[str, list[RetailPaymentMethodRow]] = defaultdict(list)
        for method in session.exec(select(RetailPaymentMethodRow)):
            methods[method.user_id].append(method)
        items: dict[str, list[RetailOrderItemRow]] = defaultdict(list)
        for item in session.exec(select(RetailOrderItemRow)):
            items[item.order_id].append(item)
        fulfillments: dict[str, list[RetailFulfillmentRow]] = defaultdict(list)
        for fulfillment in session.exec(select(RetailFulfillmentRow)):
            fulfillments[fulfillment.order_id].append(fulfillment)
        payments: dict[str, list[RetailPaymentRow]] = defaultdict(list)
        for payment in session.exec(select(RetailPaymentRow)):
            payments[payment.order_id].append(payment)
        orders = list(session.exec(select(RetailOrderRow).order_by(col(RetailOrderRow.position))))
        orders_of: dict[str, list[RetailOrderRow]] = defaultdict(list)
        for order in orders:
            orders_of[order.user_id].append(order)
        products = session.exec(select(RetailProductRow).order_by(col(RetailProductRow.position)))
        users = session.exec(select(RetailUserRow).order_by(col(RetailUserRow.position)))
        return t2.RetailDatabase(
            products={p.product_id: product_record(p, variants[p.product_id]) for p in products},
            users={u.user_id: user_record(u, methods[u.user_id], orders_of[u.user_id]) for u in users},
            orders={
                o.order_id: order_record(o, items[o.order_id], fulfillments[o.order_id], payments[o.order_id])
                for o in orders
            },
        )
