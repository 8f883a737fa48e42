"""Tests for statefile.integrations."""
