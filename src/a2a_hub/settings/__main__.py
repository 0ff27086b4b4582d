"""``python -m a2a_hub.settings``: print the settings reference (a Markdown table)."""

import sys

from a2a_hub.settings.reference import markdown_table

sys.stdout.write(markdown_table())
