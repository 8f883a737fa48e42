"""The CLI's commands, grouped by who uses them; each module exposes ``COMMANDS`` for registration."""
