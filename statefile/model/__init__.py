"""The state file as data: text helpers, the one markdown block scanner, the document, its sections and entries.

Pure: no I/O, no git, nothing above this layer is imported.
"""
