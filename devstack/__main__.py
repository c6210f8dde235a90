"""``python -m devstack``: run a local Temporal dev server and the codec server until Ctrl-C
(:func:`devstack.dev_server.main`)."""

import sys

from devstack.dev_server import main

sys.exit(main())
