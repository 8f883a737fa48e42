"""Whole-tool tests: the console script, re-stated gh-aw runs, kill trials, fuzzing and hostile input."""
