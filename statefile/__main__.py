"""``python -m statefile`` runs the command line."""

from statefile.cli import main

main()
