"""The case record: the file an auditor reads, written atomically by an activity.

The application, not the caller, chooses the path: ``<state_dir>/cases/<case_id>-<digest12>.json``,
where ``digest12`` is the first 12 hex characters of the SHA-256 of the record's canonical JSON. The
same record always lands on the same path, so a retried activity rewrites identical bytes, and a
changed record never overwrites an earlier one. ``<case_id>.latest`` names the newest record.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from pathlib import Path

from temporalio import activity

from activities.case.codes import CaseErrorCode
from contracts.case import CaseRecord
from contracts.commerce import canonical_digest
from contracts.errors import ContractError, TransientError
from contracts.names import ActivityName

CASE_ID = re.compile(r"^[A-Za-z0-9_-]{4,64}$")
DIGEST_PREFIX_CHARS = 12


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old file or the new one, never half.

    The bytes go to a temporary file in the same directory (``os.replace`` is only atomic within one
    file system), are flushed to disk, and then renamed over the target; the directory is synced so
    the rename itself survives a crash.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed explicitly before the rename
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def record_digest(record: CaseRecord) -> str:
    """SHA-256 of the record's canonical JSON (sorted keys, no whitespace)."""
    return canonical_digest(record.model_dump(mode="json"))


class CaseRecords:
    """Writes case records under ``<state_dir>/cases``."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = Path(state_dir).resolve() / "cases"

    def path_for(self, record: CaseRecord) -> Path:
        case_id = record.case.case_id
        if not CASE_ID.fullmatch(case_id):
            raise ContractError(CaseErrorCode.INVALID_CASE_ID, "Case ids are 4-64 of A-Z a-z 0-9 _ -.")
        return self.directory / f"{case_id}-{record_digest(record)[:DIGEST_PREFIX_CHARS]}.json"

    def latest_pointer(self, case_id: str) -> Path:
        return self.directory / f"{case_id}.latest"

    def write(self, record: CaseRecord) -> Path:
        """Write ``record`` and point ``<case_id>.latest`` at it; returns the record's path.

        The document keeps the model's field order, so ``fictional_notice`` is its first field.
        """
        path = self.path_for(record)
        document = json.dumps(record.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
        write_atomically(path, document)
        write_atomically(self.latest_pointer(record.case.case_id), f"{path}\n")
        return path

    def latest(self, case_id: str) -> Path | None:
        """The newest record's path for ``case_id``, or None when none was written."""
        try:
            return Path(self.latest_pointer(case_id).read_text(encoding="utf-8").strip())
        except FileNotFoundError:
            return None

    @activity.defn(name=ActivityName.WRITE_CASE_RECORD)
    async def write_case_record(self, record: CaseRecord) -> str:
        try:
            path = await asyncio.to_thread(self.write, record)
        except OSError as error:
            raise TransientError(
                CaseErrorCode.CASE_RECORD_WRITE_FAILED, f"{type(error).__name__}: {error.strerror}"
            ) from None
        activity.logger.info("case record for %s written to %s", record.case.case_id, path.name)
        return str(path)
