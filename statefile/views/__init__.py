"""Read-only views for people and agents: budgeted render (and its hints), search, history and memory pressure."""
