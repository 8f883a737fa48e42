"""The state file as data, pure (no I/O, no git, no layer above): the markdown scanner, the document, its entries."""
