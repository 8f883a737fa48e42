"""The git store, through the ``git`` binary's plumbing: git keeps every rule statefile must not get wrong (object
formats, ref backends, work trees, ref names), and a git library would cost 70-80 ms of import on every write."""
