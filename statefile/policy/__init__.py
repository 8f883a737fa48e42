"""What statefile decides, pure from documents to documents: the upstream record rules, range lines, compaction
(and list pruning), lessons, repair. It imports only :mod:`statefile.model` and the base modules."""
