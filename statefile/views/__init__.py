"""Read-only views of documents for people and agents: budgeted render, search, status, plain-data descriptions."""
