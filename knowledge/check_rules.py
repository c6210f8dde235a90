"""Check the refund rule files of a knowledge directory against its documents, line by line.

A rule names the document and version it was written against (``policy_document``, ``policy_version``)
and the two pages a quote cites (``window_page``, ``amount_page``). A rule whose pages are missing,
archived, another tenant's or at another version would make every quote a ``policy_version_mismatch``
at run time; here it is a problem on the field's line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import ValidationError

from contracts.directory import NAME_PATTERN
from contracts.errors import ConfigurationError
from contracts.knowledge import DocumentStatus
from knowledge.location import RULES_DIR, RULES_FILE, KnowledgeLocation
from knowledge.problems import PageInfo, Problem, field_line, validation_problems
from knowledge.refund_quote import REASONS, RefundRules, parse_refund_rules, rule_files


def check_rules(
    location: KnowledgeLocation, pages: Mapping[str, PageInfo], broken: set[str], problems: list[Problem]
) -> list[str]:
    """Append every problem of the rule files of ``location``; return the tenants with a valid rule.
    References to a ``broken`` document (refused already) are not reported again."""
    tenants: dict[str, Path] = {}
    files = rule_files(location)
    if not files:
        problems.append(
            Problem(location.rules_file, 1, f"no refund rule: add {RULES_FILE} or {RULES_DIR}/<tenant>.json")
        )
    for path in files:
        rule = _check_rule_file(location, path, pages, broken, problems)
        if rule is None:
            continue
        if rule.tenant in tenants:
            line = field_line(path.read_text(encoding="utf-8").splitlines(), r'"tenant"\s*:')
            problems.append(Problem(path, line, f"tenant {rule.tenant!r} already has a rule in {tenants[rule.tenant]}"))
            continue
        tenants[rule.tenant] = path
    return list(tenants)


def _check_rule_file(
    location: KnowledgeLocation, path: Path, pages: Mapping[str, PageInfo], broken: set[str], problems: list[Problem]
) -> RefundRules | None:
    start = len(problems)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()

    def line_of(name: str) -> int:
        return field_line(lines, rf'"{re.escape(name)}"\s*:')

    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(path, exc.lineno, f"not JSON: {exc.msg}"))
        return None
    if not isinstance(raw, dict):
        problems.append(Problem(path, 1, "a rule file is one JSON object"))
        return None
    try:
        rule = RefundRules.model_validate(raw)
    except ValidationError as exc:
        problems.extend(validation_problems(path, exc, line_of, what="rule"))
        return None
    field_checks = (
        ("tenant", bool(re.match(NAME_PATTERN, rule.tenant)), f"tenant {rule.tenant!r} is not a tenant name"),
        (
            "tenant",
            path.parent != location.rules_dir or rule.tenant == path.stem,
            f"the rule is for tenant {rule.tenant!r} but the file is named {path.name!r}",
        ),
        ("refund_freight", not rule.refund_freight, "automatic freight refunds are not supported"),
        ("window_days", rule.window_days >= 0, "window_days must be 0 or more"),
        ("proposal_ttl_minutes", rule.proposal_ttl_minutes > 0, "proposal_ttl_minutes must be more than 0"),
        (
            "reason_order",
            sorted(rule.reason_order) == sorted(REASONS),
            f"reason_order must list each of {', '.join(REASONS)} exactly once",
        ),
    )
    problems.extend(Problem(path, line_of(name), message) for name, ok, message in field_checks if not ok)
    if rule.policy_document in broken:
        return None
    problems.extend(_reference_problems(path, rule, pages, line_of))
    if len(problems) > start:
        return None
    try:
        parse_refund_rules(text, source=path.name)
    except ConfigurationError as exc:
        problems.append(Problem(path, 1, exc.message))
        return None
    return rule


def _reference_problems(
    path: Path, rule: RefundRules, pages: Mapping[str, PageInfo], line_of: Callable[[str], int]
) -> list[Problem]:
    """The rule's document and pages exist, are active, are the rule's tenant's and at its version."""
    found: list[Problem] = []
    documents = {info.header.id: info.header for info in pages.values()}
    document = documents.get(rule.policy_document)
    if document is None:
        found.append(
            Problem(path, line_of("policy_document"), f"policy_document {rule.policy_document!r} is no document")
        )
    else:
        if document.version != rule.policy_version:
            found.append(
                Problem(
                    path,
                    line_of("policy_version"),
                    f"policy_version {rule.policy_version!r} but {rule.policy_document} is at version "
                    f"{document.version!r}",
                )
            )
        if document.tenant != rule.tenant:
            found.append(
                Problem(
                    path,
                    line_of("policy_document"),
                    f"{rule.policy_document} is tenant {document.tenant!r}'s, not {rule.tenant!r}'s",
                )
            )
        if document.status is not DocumentStatus.ACTIVE:
            found.append(Problem(path, line_of("policy_document"), f"{rule.policy_document} is {document.status}"))
    for name, page_id in (("window_page", rule.window_page), ("amount_page", rule.amount_page)):
        info = pages.get(page_id)
        if info is None:
            found.append(Problem(path, line_of(name), f"{name} {page_id!r} is no page of any document"))
        elif info.header.id != rule.policy_document:
            found.append(
                Problem(
                    path, line_of(name), f"{name} {page_id} is not a page of policy_document {rule.policy_document}"
                )
            )
    return found
