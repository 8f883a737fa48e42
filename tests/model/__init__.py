"""Tests for statefile.model."""
