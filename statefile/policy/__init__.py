"""What statefile decides: the upstream record rules, history planning, range lines, compaction, pruning, lessons.

Pure functions from documents to documents; imports only :mod:`statefile.model` and the base modules.
"""
