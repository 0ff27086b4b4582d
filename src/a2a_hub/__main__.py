"""``python -m a2a_hub`` runs the command line."""

from a2a_hub.cli import main

main()
