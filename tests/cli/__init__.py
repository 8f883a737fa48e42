"""Tests for statefile.cli."""
