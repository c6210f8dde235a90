"""The skill catalogue: discovery, bilingual bodies, and names that can never become paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.errors import AuthorizationError, ContractError
from contracts.knowledge import Language
from knowledge.skills import SkillCatalogue, list_skills, load_skill

SKILL = """---
name: {name}
description: Use when testing {name}.
---

## en

Read the order first.

## zh

先读取订单。
"""


@pytest.fixture
def catalogue(tmp_path: Path) -> SkillCatalogue:
    for name in ("refund", "warranty"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text(SKILL.format(name=name), encoding="utf-8")
    (tmp_path / "secret.txt").write_text("not a skill", encoding="utf-8")
    return SkillCatalogue.load(tmp_path)


def test_catalogue_lists_names_and_descriptions(catalogue: SkillCatalogue) -> None:
    assert [(s.name, s.description) for s in catalogue.list_skills()] == [
        ("refund", "Use when testing refund."),
        ("warranty", "Use when testing warranty."),
    ]


def test_load_skill_returns_the_body_in_one_language(catalogue: SkillCatalogue) -> None:
    assert catalogue.load_skill("refund", Language.EN) == "Read the order first."
    assert catalogue.load_skill("refund", Language.ZH) == "先读取订单。"


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../x",
        "refund/../../etc",
        "/etc/passwd",
        "refund/SKILL.md",
        "secret.txt",
        "..",
        "Refund",
        " refund",
    ],
)
def test_names_outside_the_catalogue_are_refused(catalogue: SkillCatalogue, name: str) -> None:
    with pytest.raises(AuthorizationError) as error:
        catalogue.load_skill(name, Language.EN)
    assert error.value.code == "skill_not_found"


def test_name_must_match_its_directory(tmp_path: Path) -> None:
    (tmp_path / "refund").mkdir()
    (tmp_path / "refund" / "SKILL.md").write_text(SKILL.format(name="payments"), encoding="utf-8")
    with pytest.raises(ContractError):
        SkillCatalogue.load(tmp_path)


def test_skill_without_both_languages_is_malformed(tmp_path: Path) -> None:
    (tmp_path / "refund").mkdir()
    (tmp_path / "refund" / "SKILL.md").write_text(SKILL.format(name="refund").split("## zh")[0], encoding="utf-8")
    with pytest.raises(ContractError) as error:
        SkillCatalogue.load(tmp_path)
    assert error.value.code == "malformed_skill"


def test_packaged_skills() -> None:
    assert sorted(s.name for s in list_skills()) == ["delivery", "invoice", "policy", "refund", "warranty"]
    for summary in list_skills():
        assert summary.description
        assert load_skill(summary.name, Language.EN)
        assert load_skill(summary.name, Language.ZH)
    with pytest.raises(AuthorizationError):
        load_skill("../documents/RETURNS", Language.EN)
