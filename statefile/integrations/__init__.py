"""Formats of the tools statefile works with: gh-aw's (repo-memory, agent output, autoloop.json), a summarizer."""
