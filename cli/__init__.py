"""The command line of the support-case service (``starter.py`` is its entry point): every command, and
everything a terminal prints (the case card, the chain of proof, the audit as text and JSON, exit codes).
"""
