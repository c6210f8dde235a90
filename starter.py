"""Command line for the Qinghe support-case service (everything here is fictional).

Global options come before the subcommand::

    python starter.py --profile alice init
    python starter.py --profile alice mcp-tools
    python starter.py --profile alice quote QH-1001
    python starter.py --profile alice create-ticket QH-1005 "Where is my parcel?" --key k-1
    python starter.py eval retrieval
    python starter.py --profile alice ask "Please refund QH-1001 and explain the amount and the policy"
    python starter.py --profile chen review-info CASE [--approve | --reject]
    python starter.py --profile chen review CASE --digest D --approve
    python starter.py --profile chen verify CASE [--history FILE]
    python starter.py status CASE
    python starter.py list --status waiting_approval

Cases need a Temporal server (TEMPORAL_ADDRESS, default localhost:7233) and a running worker.py.
Bad input gets one clear line on stderr and a non-zero exit, never a traceback.
"""

import os

try:
    from cli.main import run
except KeyboardInterrupt:  # Ctrl-C while the command line loads: nothing has started, no traceback
    os._exit(130)

if __name__ == "__main__":
    run()
