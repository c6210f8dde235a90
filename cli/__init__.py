"""The command line of the support-case service (``starter.py`` is its entry point)."""
