"""``python dev_ports.py``: the old path of ``python -m devstack.ports`` (which of the dev server's ports
are taken, and by what), kept for the commands and scripts that run it by that name."""

from __future__ import annotations

import sys

from devstack.ports import answers, last_line, main, port_problems

__all__ = ["answers", "last_line", "main", "port_problems"]

if __name__ == "__main__":
    sys.exit(main())
