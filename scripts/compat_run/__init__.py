"""The parts of ``scripts/compat.py`` (``make compat``), split by responsibility.

``common`` holds the progress line and the run's start time, ``server`` runs llama_cpp.server, ``capture``
records the model requests a real workflow makes, ``wire`` sends them to the server and checks the wire,
``cases`` runs the SPEC §11 cases on a throwaway dev server, and ``report`` writes docs/compat.md.
Importing this package puts the project root on ``sys.path``, as ``scripts/compat.py`` itself does, so
that its modules can import the project's packages (``activities``, ``contracts``, ...).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
