"""``python -m a2a_hub.cli`` runs the command line."""

from a2a_hub.cli import main

main()
