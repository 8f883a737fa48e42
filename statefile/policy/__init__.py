"""What statefile decides: the upstream record rules, range lines, compaction, pruning, lessons, repair.

Pure functions from documents to documents; imports only :mod:`statefile.model` and the base modules.
"""
