"""Formats of the tools statefile works with: the scheduler's autoloop.json and an outside summarizer command."""
