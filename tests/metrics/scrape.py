"""Reading a Prometheus endpoint and the PromQL under deploy/, for the metrics tests.

:func:`scrape` reads ``/metrics`` into samples (name, labels, value) with prometheus_client's own
parser; :func:`exported_names` is every series name an endpoint exports, counters without samples yet
included (prometheus_client declares a labelled counter before its first increment, with no sample).
:func:`promql_metric_names` pulls the metric names out of a PromQL expression: every identifier that
is not a function, an aggregation, a keyword, a label name inside ``{...}``, ``by (...)``,
``without (...)`` or ``on (...)``, a string or a duration.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Scrape:
    samples: list[Sample]
    names: frozenset[str]

    def value(self, name: str, **labels: str) -> float:
        """The sum of ``name``'s samples whose labels include ``labels`` (0 when there is none)."""
        return sum(s.value for s in self.samples if s.name == name and labels.items() <= s.labels.items())

    def label_values(self) -> set[str]:
        return {value for sample in self.samples for value in sample.labels.values()}


def scrape(url: str) -> Scrape:
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode("utf-8")
    samples: list[Sample] = []
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        if family.type == "counter" and not family.samples:  # declared, not incremented yet
            names.add(f"{family.name}_total")
        for sample in family.samples:
            names.add(sample.name)
            samples.append(Sample(sample.name, dict(sample.labels), float(sample.value)))
    return Scrape(samples, frozenset(names))


def exported_names(*scrapes: Scrape) -> frozenset[str]:
    return frozenset().union(*(s.names for s in scrapes))


PROMQL_WORDS = frozenset(
    {
        # aggregations and their modifiers
        "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
        "quantile", "limitk", "limit_ratio", "by", "without", "on", "ignoring", "group_left", "group_right",
        "bool", "and", "or", "unless", "offset", "atop",
        # functions
        "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "day_of_month",
        "day_of_week", "delta", "deriv", "exp", "floor", "histogram_quantile", "holt_winters", "hour", "idelta",
        "increase", "irate", "label_join", "label_replace", "ln", "log2", "log10", "minute", "month",
        "predict_linear", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "time",
        "timestamp", "vector", "year", "avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
        "count_over_time", "quantile_over_time", "stddev_over_time", "stdvar_over_time", "last_over_time",
        "present_over_time", "inf", "nan",
    }
)  # fmt: skip
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_SELECTORS = re.compile(r"\{[^}]*\}")
_GROUPINGS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGES = re.compile(r"\[[^\]]*\]")
_IDENTIFIER = re.compile(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w.])")
_GRAFANA_VARIABLES = re.compile(r"\$(?:\{[^}]*\}|\w+)")


def promql_metric_names(expression: str) -> set[str]:
    """The metric names ``expression`` selects (Grafana's ``$__rate_interval``-style variables dropped)."""
    text = _GRAFANA_VARIABLES.sub("5m", expression)
    for pattern in (_STRINGS, _SELECTORS, _GROUPINGS, _RANGES):
        text = pattern.sub(" ", text)
    text = re.sub(r"\b\d+(?:\.\d+)?(?:ms|s|m|h|d|w|y)?\b", " ", text)
    return {name for name in _IDENTIFIER.findall(text) if name.lower() not in PROMQL_WORDS}


def all_names(expressions: Iterable[str]) -> set[str]:
    return set().union(*(promql_metric_names(expr) for expr in expressions))
