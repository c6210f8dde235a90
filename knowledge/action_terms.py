"""Which policy pages each tenant's terms give each action: ``action_terms.json`` in the knowledge directory.

An action's rule (:mod:`knowledge.action_rules`) is code, the same for every merchant; what a merchant's
own terms say about it is data. For each tenant the file names, per action kind, the pages of that
tenant's documents the action rests on: the commerce server puts them in the proposal's effect, and a
case's draft must cite each of them before the customer is shown the proposal. A tenant whose terms name
no page for a kind does not offer it through this service, whatever the directory allows: the rule refuses
it (``action_not_eligible``), since nothing in the merchant's terms would back it. A return's pages are
the tenant's refund rule's (``window_page``, ``amount_page``) and are not listed here.

:func:`check_action_terms` reports, line by line, a page that is missing, archived or another tenant's, as
``starter.py knowledge check`` does for the refund rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from contracts.action_policy import ActionKind
from contracts.errors import ConfigurationError
from contracts.knowledge import DocumentStatus, KnowledgeErrorCode
from knowledge.location import KnowledgeLocation, knowledge_location
from knowledge.problems import PageInfo, Problem, field_line, validation_problems

TERMS_FILE = "action_terms.json"
PAGE_ID = r"^[A-Z][A-Z0-9_]*:p\d{2}$"


class ActionTerms(BaseModel):
    """Per tenant, per action kind, the pages of the tenant's terms the action rests on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fictional: bool = False
    tenants: dict[str, dict[ActionKind, tuple[str, ...]]]

    def pages(self, tenant: str, kind: ActionKind) -> tuple[str, ...]:
        """The pages ``tenant``'s terms give ``kind`` (none: its terms do not offer it)."""
        return self.tenants.get(tenant, {}).get(kind, ())


def terms_path(location: KnowledgeLocation) -> Path:
    return location.root / TERMS_FILE


@lru_cache(maxsize=4)
def load_action_terms(location: KnowledgeLocation) -> ActionTerms:
    """The terms of ``location``; none when it has no ``action_terms.json`` (every action then refused)."""
    path = terms_path(location)
    if not path.is_file():
        return ActionTerms(tenants={})
    try:
        terms = ActionTerms.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise ConfigurationError(
            KnowledgeErrorCode.INVALID_RULE, f"{TERMS_FILE}: {first['loc']}: {first['msg']}"
        ) from None
    bad = [page for kinds in terms.tenants.values() for pages in kinds.values() for page in pages]
    bad = [page for page in bad if not re.match(PAGE_ID, page)]
    if bad:
        raise ConfigurationError(KnowledgeErrorCode.INVALID_RULE, f"{TERMS_FILE}: {bad[0]!r} is not a page id")
    return terms


def action_pages(tenant: str, kind: ActionKind) -> tuple[str, ...]:
    """The pages the configured knowledge's terms of ``tenant`` give ``kind`` (none: not offered)."""
    return load_action_terms(knowledge_location()).pages(tenant, kind)


def check_action_terms(location: KnowledgeLocation, pages: Mapping[str, PageInfo], problems: list[Problem]) -> None:
    """Append a problem for each page the terms name that is no active page of the tenant's own documents."""
    path = terms_path(location)
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    try:
        terms = ActionTerms.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        problems.append(Problem(path, exc.lineno, f"not JSON: {exc.msg}"))
        return
    except ValidationError as exc:
        problems.extend(validation_problems(path, exc, lambda name: field_line(lines, rf'"{name}"\s*:'), what="terms"))
        return
    for tenant, kinds in terms.tenants.items():
        for kind, page_ids in kinds.items():
            line = field_line(lines, rf'"{kind.value}"\s*:')
            for page_id in page_ids:
                info = pages.get(page_id)
                if info is None:
                    problem = f"{page_id!r} is no page of any document"
                elif info.header.tenant != tenant:
                    problem = f"{page_id} is a page of tenant {info.header.tenant!r}, not of {tenant!r}"
                elif info.header.status is not DocumentStatus.ACTIVE:
                    problem = f"{page_id} is {info.header.status}"
                else:
                    continue
                problems.append(Problem(path, line, f"{tenant} {kind.value}: {problem}"))
