"""Tests for statefile.policy."""
