"""Sampling settings of model requests: temperature per request kind and one seed (SPEC §6).

Defaults: temperature 0 for every kind and the seed :data:`DEFAULT_SEED`, so that the same case against
the same server asks the same questions and gets, where the server is deterministic, the same answers.

- plan, investigate and review are decisions (which order, which tool, pass or fail): variety only
  makes a run harder to reproduce and a failure harder to replay.
- compose is 0 too: the draft must restate the facts and cite the passages it was shown, and it is
  validated and reviewed; a varied wording buys nothing there, while a reproducible draft lets a
  compat run or a refused draft be reproduced. An operator who wants variety sets
  ``SUPPORT_MODEL_TEMPERATURE_COMPOSE``.

The seed is sent only where the profile's server takes one (:mod:`activities.model.provider_profiles`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from activities.model.codes import ModelErrorCode
from contracts.errors import ConfigurationError
from contracts.names import REQUEST_KINDS, RequestKind

TEMPERATURE_VARIABLE = "SUPPORT_MODEL_TEMPERATURE"
SEED_VARIABLE = "SUPPORT_MODEL_SEED"
SERVER_DEFAULT = "default"
"""The value of a sampling variable that sends nothing, leaving it to the server (e.g. a reasoning
model that refuses any temperature but its own)."""
DEFAULT_TEMPERATURES: Mapping[RequestKind, float | None] = MappingProxyType(dict.fromkeys(REQUEST_KINDS, 0.0))
DEFAULT_SEED = 7
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**31 - 1
"""The largest seed every server takes (llama.cpp reads it into a 32-bit integer)."""


def load_temperatures(env: Mapping[str, str]) -> dict[RequestKind, float | None]:
    """Each kind's temperature: ``SUPPORT_MODEL_TEMPERATURE_<KIND>``, else ``SUPPORT_MODEL_TEMPERATURE``,
    else 0; ``default`` sends none. Raise ConfigurationError naming the variable for a bad value."""
    every_set, every = _temperature(env, TEMPERATURE_VARIABLE)
    temperatures: dict[RequestKind, float | None] = {}
    for kind in REQUEST_KINDS:
        kind_set, value = _temperature(env, f"{TEMPERATURE_VARIABLE}_{kind.upper()}")
        if kind_set:
            temperatures[kind] = value
        else:
            temperatures[kind] = every if every_set else DEFAULT_TEMPERATURES[kind]
    return temperatures


def load_seed(env: Mapping[str, str]) -> int | None:
    """``SUPPORT_MODEL_SEED``: a whole number from 0 to 2147483647 (default 7); ``default`` sends none."""
    value = env.get(SEED_VARIABLE, "").strip()
    if not value:
        return DEFAULT_SEED
    if value.lower() == SERVER_DEFAULT:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_SEED:
        raise ConfigurationError(
            ModelErrorCode.INVALID_MODEL_SEED,
            f"{SEED_VARIABLE} must be a whole number from 0 to {MAX_SEED}, or {SERVER_DEFAULT!r} to send none.",
        )
    return int(value)


def sampling_label(temperatures: Mapping[RequestKind, float | None], seed: int | None, *, sends_seed: bool) -> str:
    """``temperature=0 seed=7``, the temperatures per kind when they differ, ``default`` where nothing is
    sent; no seed part for a server that takes none."""
    shown = {kind: SERVER_DEFAULT if value is None else f"{value:g}" for kind, value in temperatures.items()}
    values = set(shown.values())
    label = "temperature=" + (values.pop() if len(values) == 1 else ", ".join(f"{k} {v}" for k, v in shown.items()))
    if sends_seed:
        label += f" seed={SERVER_DEFAULT if seed is None else seed}"
    return label


def _temperature(env: Mapping[str, str], name: str) -> tuple[bool, float | None]:
    """Whether the variable is set, and its temperature (None: send none)."""
    value = env.get(name, "").strip()
    if not value:
        return False, None
    if value.lower() == SERVER_DEFAULT:
        return True, None
    try:
        temperature = float(value)
    except ValueError:
        temperature = math.nan
    if not 0.0 <= temperature <= MAX_TEMPERATURE:  # also refuses nan and inf
        raise ConfigurationError(
            ModelErrorCode.INVALID_MODEL_TEMPERATURE,
            f"{name} must be a number from 0 to {MAX_TEMPERATURE:g}, or {SERVER_DEFAULT!r} to send none.",
        )
    return True, temperature
