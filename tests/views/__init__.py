"""Tests for statefile.views."""
