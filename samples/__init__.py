"""Sample state files and an autoloop.json, bundled for `statefile demo` and the tests."""
