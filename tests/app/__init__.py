"""Tests for statefile.app."""
