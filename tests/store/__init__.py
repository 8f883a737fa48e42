"""Tests for statefile.store."""
