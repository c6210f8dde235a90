"""What a case's model requests used and cost: tokens per request kind, priced from the operator's table.

A price is what the operator set for a provider profile and model (activities/model/model_prices.py reads the
table; the model activity attaches the price that applied to its reply). Nothing here guesses: a reply
without reported usage, or a model without a price, makes the case's cost ``unknown``, never zero.
Cost is summed exactly in pico-US-dollars (a price in micro-dollars per million tokens times tokens).
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

UNKNOWN_COST = "unknown"
PICO_PER_USD = 10**12
MICRO_PER_USD = 10**6


class ModelPrice(BaseModel):
    """The operator's price for one provider profile and model, in micro-US-dollars per million tokens
    (``0.40`` USD per million prompt tokens is 400000)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_micro_usd_per_mtok: int = Field(ge=0)
    completion_micro_usd_per_mtok: int = Field(ge=0)

    def cost_pico_usd(self, prompt_tokens: int, completion_tokens: int) -> int:
        return prompt_tokens * self.prompt_micro_usd_per_mtok + completion_tokens * self.completion_micro_usd_per_mtok


class KindUsage(BaseModel):
    """The replies of one request kind (plan, tool choice, draft, review) in one case."""

    model_config = ConfigDict(extra="forbid")

    replies: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_unknown: int = 0
    """Replies whose provider reported no usage: their tokens are not in the sums."""
    unpriced: int = 0
    """Replies with usage but no price in the operator's table: their cost is not in ``cost_pico_usd``."""
    cost_pico_usd: int = 0


class CaseUsage(BaseModel):
    """Tokens and cost of every model reply a case received, by request kind (an ActivityName value)."""

    model_config = ConfigDict(extra="forbid")

    by_kind: dict[str, KindUsage] = Field(default_factory=dict, max_length=16)

    def add(
        self, kind: str, prompt_tokens: int | None, completion_tokens: int | None, price: ModelPrice | None
    ) -> None:
        """Count one reply; ``None`` tokens when the provider did not report usage."""
        entry = self.by_kind.setdefault(kind, KindUsage())
        entry.replies += 1
        if prompt_tokens is None or completion_tokens is None:
            entry.usage_unknown += 1
            return
        entry.prompt_tokens += prompt_tokens
        entry.completion_tokens += completion_tokens
        if price is None:
            entry.unpriced += 1
        else:
            entry.cost_pico_usd += price.cost_pico_usd(prompt_tokens, completion_tokens)

    @property
    def replies(self) -> int:
        return sum(entry.replies for entry in self.by_kind.values())

    @property
    def prompt_tokens(self) -> int:
        return sum(entry.prompt_tokens for entry in self.by_kind.values())

    @property
    def completion_tokens(self) -> int:
        return sum(entry.completion_tokens for entry in self.by_kind.values())

    @property
    def cost_known(self) -> bool:
        """Every reply reported its usage and had a price (a case with no reply yet costs nothing)."""
        return all(not entry.usage_unknown and not entry.unpriced for entry in self.by_kind.values())

    @property
    def cost_pico_usd(self) -> int:
        return sum(entry.cost_pico_usd for entry in self.by_kind.values())

    def cost_usd(self) -> Decimal | None:
        """The case's cost in US dollars, or None when any reply's usage or price is unknown."""
        return Decimal(self.cost_pico_usd) / PICO_PER_USD if self.cost_known else None

    def cost_label(self) -> str:
        """``"0.004210 USD"`` (six decimals, rounded half up), or ``unknown``."""
        cost = self.cost_usd()
        return UNKNOWN_COST if cost is None else f"{format_usd(cost)} USD"


def format_usd(amount: Decimal) -> str:
    """Six decimals: the precision the memo, the case view and ``starter.py usage`` print."""
    return f"{amount.quantize(Decimal('0.000001')):f}"
