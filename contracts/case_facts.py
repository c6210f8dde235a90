"""A case's facts: the records its tool calls returned, read as typed models.

On the wire (carried across continue-as-new, sent in compose and review requests) the facts are the
JSON object they have always been: one key per fact (:class:`~contracts.tools.FactKey`), in the order
the tools answered, each holding the tool's result exactly as it came back. A pydantic model would
write its fields in declaration order and add the ones never set (and a record re-dumped from its
model gains the fields a newer model added), so the wire form stays that object and :class:`CaseFacts`
parses a record into its tool's result model when it is read. A record that is not a valid instance of
its model reads as None; the commerce server checks every result against the same models, so every
record it sent is one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, GetCoreSchemaHandler, ValidationError
from pydantic_core import core_schema

from contracts.commerce import Invoice, Order, OrderList, Product, RefundQuote, Shipment, Ticket
from contracts.tools import FactKey

_M = TypeVar("_M", bound=BaseModel)


class CaseFacts:
    """The records a case's tool calls returned, by fact key, typed on reading (see the module docstring)."""

    __slots__ = ("_wire",)

    def __init__(self, wire: Mapping[str, Any] | None = None) -> None:
        self._wire: dict[str, Any] = dict(wire) if wire else {}

    def keep(self, key: FactKey, record: Any) -> None:
        """Keep ``record`` (a tool result as it came back) as the fact ``key``, replacing an earlier one."""
        self._wire[key.value] = record

    def wire(self) -> dict[str, Any]:
        """The facts as the JSON object they travel as (a copy: keys in the order they were first kept)."""
        return dict(self._wire)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """In a pydantic model (the case's carried state) the facts are their wire object."""
        from_wire = core_schema.no_info_after_validator_function(cls, core_schema.dict_schema(core_schema.str_schema()))
        return core_schema.union_schema(
            [core_schema.is_instance_schema(cls), from_wire],
            serialization=core_schema.plain_serializer_function_ser_schema(cls.wire),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CaseFacts) and self._wire == other._wire

    def __repr__(self) -> str:
        return f"CaseFacts({self._wire!r})"

    def typed(self, key: FactKey, model: type[_M]) -> _M | None:
        """The fact ``key`` as ``model``; None when the case holds no such fact or it is not one."""
        raw = self._wire.get(key.value)
        if not isinstance(raw, Mapping):
            return None
        try:
            return model.model_validate(raw)
        except ValidationError:
            return None

    @property
    def orders(self) -> OrderList | None:
        return self.typed(FactKey.ORDERS, OrderList)

    @property
    def order(self) -> Order | None:
        return self.typed(FactKey.ORDER, Order)

    @property
    def shipment(self) -> Shipment | None:
        return self.typed(FactKey.SHIPMENT, Shipment)

    @property
    def invoice(self) -> Invoice | None:
        return self.typed(FactKey.INVOICE, Invoice)

    @property
    def product(self) -> Product | None:
        return self.typed(FactKey.PRODUCT, Product)

    @property
    def ticket(self) -> Ticket | None:
        return self.typed(FactKey.TICKET, Ticket)

    @property
    def quote(self) -> RefundQuote | None:
        return self.typed(FactKey.QUOTE, RefundQuote)

    def recorded_cents(self) -> Iterator[int]:
        """Every amount in cents the records state (their ``*_cents`` fields): the order, its invoice, the
        order summaries and the quote; shipments, products, tickets and preferences state none."""
        records: list[BaseModel | None] = [self.order, self.invoice, self.quote]
        if (orders := self.orders) is not None:
            records.extend(orders.orders)
        for record in records:
            if record is not None:
                yield from cents_fields(record)


def cents_fields(record: BaseModel) -> Iterator[int]:
    """The values of ``record``'s own integer fields named ``*_cents``."""
    for name in type(record).model_fields:
        value = getattr(record, name)
        if name.endswith("_cents") and isinstance(value, int) and not isinstance(value, bool):
            yield value
