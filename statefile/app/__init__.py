"""The use cases: one function per user action over a store, with the configuration and the run context."""
