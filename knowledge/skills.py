"""The reviewed catalogue of investigation procedures (``skills/<name>/SKILL.md``).

A skill describes a procedure and grants nothing. The catalogue is discovered once from the packaged
directory (or the one ``SUPPORT_KNOWLEDGE_DIR`` names); ``load_skill`` only looks names up in it, so a
caller-supplied name never becomes part of a file path and "../x" or an absolute path is simply an
unknown skill.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from contracts.errors import AuthorizationError, ContractError
from contracts.knowledge import KnowledgeErrorCode, Language, SkillSummary
from knowledge.location import knowledge_location

SKILLS_DIR = Path(__file__).parent / "skills"

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.DOTALL)
_LANGUAGE_HEADING = re.compile(r"^## (en|zh)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Skill:
    summary: SkillSummary
    bodies: dict[Language, str]


class SkillCatalogue:
    def __init__(self, skills: dict[str, Skill]) -> None:
        self._skills = skills

    @classmethod
    def load(cls, skills_dir: Path | None = None) -> SkillCatalogue:
        directory = skills_dir or SKILLS_DIR
        skills: dict[str, Skill] = {}
        for path in sorted(directory.glob("*/SKILL.md")):
            skill = parse_skill(path.read_text(encoding="utf-8-sig"), source=str(path.relative_to(directory)))
            if skill.summary.name != path.parent.name:
                raise ContractError(
                    KnowledgeErrorCode.MALFORMED_SKILL,
                    f"{path.parent.name}/SKILL.md declares name {skill.summary.name!r}.",
                )
            skills[skill.summary.name] = skill
        return cls(skills)

    def list_skills(self) -> list[SkillSummary]:
        return [skill.summary for skill in self._skills.values()]

    def load_skill(self, name: str, language: Language) -> str:
        """The body of a catalogued skill; any other name is refused, never resolved as a path."""
        skill = self._skills.get(name) if isinstance(name, str) else None
        if skill is None:
            known = ", ".join(self._skills)
            raise AuthorizationError(
                KnowledgeErrorCode.SKILL_NOT_FOUND, f"No skill with that name; known skills: {known}."
            )
        try:
            return skill.bodies[Language(language)]
        except ValueError as exc:
            raise ContractError(KnowledgeErrorCode.INVALID_LANGUAGE, f"Unsupported language {language!r}.") from exc


def parse_skill(text: str, *, source: str) -> Skill:
    """Front-matter ``name`` and ``description``, then a ``## en`` and a ``## zh`` body."""
    match = _FRONT_MATTER.match(text.replace("\r\n", "\n"))
    if match is None:
        raise ContractError(KnowledgeErrorCode.MALFORMED_SKILL, f"{source}: missing '---' front-matter.")
    try:
        meta = yaml.safe_load(match.group(1)) or {}
        summary = SkillSummary.model_validate({"name": meta.get("name"), "description": meta.get("description")})
    except (yaml.YAMLError, AttributeError, ValueError) as exc:
        raise ContractError(KnowledgeErrorCode.MALFORMED_SKILL, f"{source}: invalid front-matter: {exc}") from exc
    parts = _LANGUAGE_HEADING.split(match.group(2))
    bodies = {Language(parts[i]): parts[i + 1].strip() for i in range(1, len(parts), 2)}
    if sorted(bodies) != sorted(Language) or len(parts) != 2 * len(Language) + 1:
        raise ContractError(
            KnowledgeErrorCode.MALFORMED_SKILL, f"{source}: needs exactly one '## en' and one '## zh' body."
        )
    if any(not body for body in bodies.values()):
        raise ContractError(KnowledgeErrorCode.MALFORMED_SKILL, f"{source}: a language body is empty.")
    return Skill(summary=summary, bodies=bodies)


def default_catalogue() -> SkillCatalogue:
    """The skills at :func:`knowledge.location.knowledge_location` (``SUPPORT_KNOWLEDGE_DIR``, else the
    packaged ones), discovered once per directory and process; a directory without ``skills/`` has none."""
    return _catalogue_at(knowledge_location().skills)


@functools.lru_cache(maxsize=4)
def _catalogue_at(skills_dir: Path) -> SkillCatalogue:
    return SkillCatalogue.load(skills_dir)


def list_skills() -> list[SkillSummary]:
    """Names and descriptions of the configured skills (what planning is shown)."""
    return default_catalogue().list_skills()


def load_skill(name: str, language: Language) -> str:
    """The configured skill's body in ``language``; unknown names raise ``skill_not_found``."""
    return default_catalogue().load_skill(name, language)
