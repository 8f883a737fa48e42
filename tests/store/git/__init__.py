"""Tests for statefile.store.git."""
