"""Where the knowledge lives: the packaged directory, or a merchant's own named by ``SUPPORT_KNOWLEDGE_DIR``.

Both have one layout (docs/knowledge.md): ``documents/*.md``, ``skills/<name>/SKILL.md`` and the refund
rules, ``refund_rules.json`` (one rule) and/or ``refund_rules/<tenant>.json`` (one rule per tenant).
:func:`knowledge_location` is the only place that decides which directory is read; the worker's tools,
the commerce server's quote and the reviewer console all go through it, so they always agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contracts.errors import ConfigurationError
from contracts.knowledge import KnowledgeErrorCode

KNOWLEDGE_DIR_ENV = "SUPPORT_KNOWLEDGE_DIR"
PACKAGED_ROOT = Path(__file__).resolve().parent
DOCUMENTS = "documents"
SKILLS = "skills"
RULES_FILE = "refund_rules.json"
RULES_DIR = "refund_rules"


@dataclass(frozen=True)
class KnowledgeLocation:
    """One knowledge directory; ``packaged`` when it is the one shipped in this package."""

    root: Path
    packaged: bool

    @property
    def documents(self) -> Path:
        return self.root / DOCUMENTS

    @property
    def skills(self) -> Path:
        return self.root / SKILLS

    @property
    def rules_file(self) -> Path:
        return self.root / RULES_FILE

    @property
    def rules_dir(self) -> Path:
        return self.root / RULES_DIR

    def describe(self) -> str:
        return "the packaged knowledge" if self.packaged else f"{KNOWLEDGE_DIR_ENV}={self.root}"


PACKAGED = KnowledgeLocation(PACKAGED_ROOT, packaged=True)


def knowledge_location(environ: Mapping[str, str] = os.environ) -> KnowledgeLocation:
    """The directory named by ``SUPPORT_KNOWLEDGE_DIR``, else the packaged knowledge.

    Only the shape is checked here (a directory with ``documents/`` and at least one rule file); what
    the files say is checked by :func:`knowledge.check.require_valid_knowledge`.
    Raises :class:`ConfigurationError` for a named directory that is missing or lacks that shape.
    """
    value = (environ.get(KNOWLEDGE_DIR_ENV) or "").strip()
    if not value:
        return PACKAGED
    root = Path(value).expanduser()
    if not root.is_dir():
        raise ConfigurationError(KnowledgeErrorCode.KNOWLEDGE_DIR, f"{KNOWLEDGE_DIR_ENV}={value!r} is not a directory.")
    location = KnowledgeLocation(root.resolve(), packaged=False)
    if not location.documents.is_dir():
        raise ConfigurationError(
            KnowledgeErrorCode.KNOWLEDGE_DIR, f"{KNOWLEDGE_DIR_ENV}={value!r} has no {DOCUMENTS}/ folder."
        )
    if not location.rules_file.is_file() and not location.rules_dir.is_dir():
        raise ConfigurationError(
            KnowledgeErrorCode.KNOWLEDGE_DIR,
            f"{KNOWLEDGE_DIR_ENV}={value!r} has neither {RULES_FILE} nor a {RULES_DIR}/ folder.",
        )
    return location
