"""The use-case layer between the command line and the rest: configuration, the run context, one function per
operation over a store."""
