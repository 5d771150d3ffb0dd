"""The `nsysh2d` command (click): commands.py holds the group, a module per family of commands beside it, and the
options shared by several commands are declared once, in options.py (kit.py: the plumbing)."""
from .commands import main  # noqa: F401 - the console script's entry point: nsysh2d.cli:main
