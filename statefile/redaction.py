"""Credentials never reach output: every message statefile prints goes through :func:`redact` (base layer).

Tokens travel in remote URLs and HTTP headers; git echoes both in its errors.
"""

from __future__ import annotations

import re

# userinfo in a URL (https://user:token@host), an Authorization header value, and bare GitHub tokens.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_AUTH_HEADER = re.compile(r"(?i)(authorization:\s*(?:basic|bearer|token)?\s*)[^\s'\"]+")
_GITHUB_TOKEN = re.compile(r"\b(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{10,}")


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``***``: URL userinfo, Authorization values, GitHub tokens."""
    text = _URL_USERINFO.sub(r"\1***@", text)
    text = _AUTH_HEADER.sub(r"\1***", text)
    return _GITHUB_TOKEN.sub("***", text)
