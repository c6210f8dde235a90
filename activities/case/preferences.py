"""Consented reply-language preferences, one small JSON file under the state dir.

A preference is stored only with the customer's explicit consent (AGREEMENT: preferences); it is
the only thing remembered across cases. The starter writes it, the worker reads it through the
``get_language_preference`` tool. Writes are atomic and serialised with a lock file, so a reader in
another process never sees a half-written file and two writers never lose each other's update.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.case.case_records import write_atomically
from activities.case.codes import CaseErrorCode
from contracts.errors import BusinessError, ContractError
from contracts.knowledge import Language, parse_language

FILE_NAME = "preferences.json"


class LanguagePreferences:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / FILE_NAME
        self._lock_path = Path(state_dir) / f".{FILE_NAME}.lock"

    def remember(self, subject: str, language: Language | str, consent: bool) -> Language:
        """Store ``subject``'s reply language; refused with ``consent_required`` without consent."""
        if consent is not True:
            raise BusinessError(
                CaseErrorCode.CONSENT_REQUIRED,
                "A language preference is stored only with explicit consent (--consent).",
            )
        chosen = parse_language(language)
        with self._locked():
            entries = self._read()
            entries[subject] = {"language": chosen.value, "consented_at": datetime.now(UTC).isoformat()}
            self._write(entries)
        return chosen

    def forget(self, subject: str) -> bool:
        """Withdraw consent: delete the preference. True when there was one."""
        with self._locked():
            entries = self._read()
            if entries.pop(subject, None) is None:
                return False
            self._write(entries)
        return True

    def get(self, subject: str) -> Language | None:
        entry = self._read().get(subject)
        return Language(entry["language"]) if entry else None

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError as exc:
            raise ContractError(
                CaseErrorCode.PREFERENCES_UNREADABLE, "The stored preferences are not valid JSON."
            ) from exc
        if not isinstance(data, dict):
            raise ContractError(CaseErrorCode.PREFERENCES_UNREADABLE, "The stored preferences are not a JSON object.")
        return data

    def _write(self, entries: dict[str, Any]) -> None:
        write_atomically(self.path, json.dumps(entries, ensure_ascii=False, indent=2, sort_keys=True) + "\n")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
