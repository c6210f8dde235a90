"""The operator's price table: what a model's tokens cost, per provider and model (docs/usage.md).

``SUPPORT_MODEL_PRICES`` names a TOML file; unset, the packaged :data:`DEFAULT_PRICES_FILE` applies,
which prices nothing (no price is known for certain to this project: the rehearsal stand-in reports
no usage, and a real model's list price is the operator's to state). One table per provider, one
entry per model, the model named as the provider reports it in its replies::

    [openai-compatible."gpt-4o-mini-2024-07-18"]
    prompt_usd_per_mtok = "0.15"
    completion_usd_per_mtok = "0.60"

Prices are US dollars per million tokens, written as decimal strings (a TOML float is binary and not
exact) with at most six decimals, and become :class:`contracts.usage.ModelPrice` micro-dollars
exactly. Anything else (a negative price, a seventh decimal, an unknown key, a provider the service
does not have) is a :class:`ConfigurationError` of one line naming the file and the entry.

:class:`ModelPrices` is what the model gateway holds: each lookup stats the file and reads it again
when it changed, so an operator changes prices without restarting the worker. A file that turns bad
while the worker runs is logged once, and replies are priced as unknown until it is fixed: a cost is
never computed from a table the operator has since replaced.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from activities.model.codes import ModelErrorCode
from contracts.errors import ConfigurationError
from contracts.usage import MICRO_PER_USD, ModelPrice

logger = logging.getLogger(__name__)

PRICES_ENV = "SUPPORT_MODEL_PRICES"
DEFAULT_PRICES_FILE = Path(__file__).with_name("model_prices.toml")
PRICED_PROVIDERS = ("deepseek", "openai-compatible")
"""The providers whose replies report usage (:data:`activities.model.model_settings.Provider` less the
rehearsal stand-in, which reports none and so has nothing to price)."""
PROMPT_KEY = "prompt_usd_per_mtok"
COMPLETION_KEY = "completion_usd_per_mtok"
MAX_DECIMALS = 6
"""A micro-dollar per million tokens: the unit of :class:`ModelPrice`."""
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")

Signature = tuple[int, int, int]
"""What says a file changed: its modification time (ns), size and inode."""


@dataclass(frozen=True)
class PriceTable:
    """The prices one file states, by (provider, model)."""

    path: Path
    prices: Mapping[tuple[str, str], ModelPrice] = field(default_factory=dict)

    def get(self, provider: str, model: str) -> ModelPrice | None:
        return self.prices.get((provider, model))


def read_price_table(path: Path) -> PriceTable:
    """The table in ``path``; raise ConfigurationError (one line, naming the file) if it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _refused(path, f"no such file (set {PRICES_ENV} to a TOML price table, or unset it)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise _refused(path, f"unreadable ({type(error).__name__}: {error})") from None
    return parse_price_table(text, path)


def parse_price_table(text: str, path: Path) -> PriceTable:
    """The table in ``text`` (read from ``path``, which error messages name)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _refused(path, f"not valid TOML: {error}") from None
    prices: dict[tuple[str, str], ModelPrice] = {}
    for provider, models in document.items():
        if provider not in PRICED_PROVIDERS:
            raise _refused(
                path, f"[{_key(provider)}]: unknown provider; a table per provider: {', '.join(PRICED_PROVIDERS)}"
            )
        if not isinstance(models, dict):
            raise _refused(path, f'{_key(provider)}: expected one table per model, e.g. [{provider}."MODEL"]')
        for model, entry in models.items():
            where = f"[{provider}.{_key(model)}]"
            if not model.strip():
                raise _refused(path, f"{where}: the model name is empty")
            prices[(provider, model)] = _price(entry, path, where)
    return PriceTable(path, prices)


def _price(entry: Any, path: Path, where: str) -> ModelPrice:
    if not isinstance(entry, dict):
        raise _refused(path, f"{where}: expected a table with {PROMPT_KEY} and {COMPLETION_KEY}")
    unknown = sorted(set(entry) - {PROMPT_KEY, COMPLETION_KEY})
    if unknown:
        raise _refused(path, f"{where}: unknown key {_key(unknown[0])}; an entry has {PROMPT_KEY} and {COMPLETION_KEY}")
    missing = [key for key in (PROMPT_KEY, COMPLETION_KEY) if key not in entry]
    if missing:
        raise _refused(path, f"{where}: {missing[0]} is missing")
    return ModelPrice(
        prompt_micro_usd_per_mtok=micro_usd(entry[PROMPT_KEY], path, f"{where} {PROMPT_KEY}"),
        completion_micro_usd_per_mtok=micro_usd(entry[COMPLETION_KEY], path, f"{where} {COMPLETION_KEY}"),
    )


def micro_usd(value: Any, path: Path, where: str) -> int:
    """A price in US dollars (a decimal string such as ``"0.15"``, or a whole number) as micro-dollars,
    exactly: integer arithmetic on the digits, so no rounding can occur at any size."""
    if isinstance(value, float):
        raise _refused(path, f'{where}: write the price as a string ("{value}"): a TOML float is not exact')
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise _refused(path, f"{where}: {value} is negative")
        return value * MICRO_PER_USD
    if not isinstance(value, str):
        raise _refused(path, f'{where}: expected US dollars per million tokens as a string, e.g. "0.15"')
    shown = _key(value[:40])
    if value.strip().startswith("-"):
        raise _refused(path, f"{where}: {shown} is negative")
    if not _DECIMAL.fullmatch(value):
        raise _refused(path, f'{where}: {shown} is not a decimal number of US dollars, e.g. "0.15"')
    whole, _, fraction = value.partition(".")
    if len(fraction) > MAX_DECIMALS:
        raise _refused(path, f"{where}: {shown} has {len(fraction)} decimals; at most {MAX_DECIMALS} (a micro-dollar)")
    return int(whole) * MICRO_PER_USD + int(fraction.ljust(MAX_DECIMALS, "0"))


def _key(name: str) -> str:
    """A key as TOML would quote it, for messages (never more than one line)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _refused(path: Path, problem: str) -> ConfigurationError:
    return ConfigurationError(ModelErrorCode.INVALID_MODEL_PRICES, " ".join(f"{path}: {problem}".split()))


def _signature(path: Path) -> Signature | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


class ModelPrices:
    """The price table of one file, read again whenever the file changes (a ``stat`` per lookup).

    Built from a file that is not a good table, it raises ConfigurationError: the worker refuses to
    start. Later, a bad or missing file is logged once per change and prices nothing until fixed.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._signature = _signature(self.path)
        self._table: PriceTable | None = read_price_table(self.path)
        self._unpriced: set[tuple[str, str]] = set()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ModelPrices:
        """The file ``SUPPORT_MODEL_PRICES`` names, else the packaged default table (which prices nothing)."""
        env = os.environ if environ is None else environ
        named = env.get(PRICES_ENV, "").strip()
        return cls(Path(named) if named else DEFAULT_PRICES_FILE)

    def price(self, provider: str, model: str) -> ModelPrice | None:
        """The price for ``provider`` and ``model`` in the file as it is now; None when it has none."""
        table = self._current()
        if table is None:
            return None
        price = table.get(provider, model)
        if price is None and provider in PRICED_PROVIDERS and (provider, model) not in self._unpriced:
            self._unpriced.add((provider, model))
            logger.warning(
                "model prices: %s has no price for provider %s model %r; its replies' cost is unknown",
                self.path,
                provider,
                model,
            )
        return price

    def _current(self) -> PriceTable | None:
        signature = _signature(self.path)
        if signature == self._signature:
            return self._table
        self._signature = signature
        self._unpriced.clear()
        try:
            self._table = read_price_table(self.path)
        except ConfigurationError as error:
            self._table = None
            logger.warning("model prices: %s; replies are priced as unknown until the file is fixed", error.message)
        return self._table
