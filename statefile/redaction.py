"""Credentials never reach output: every message and setting statefile prints goes through :func:`redact`, which
errs towards hiding (tokens travel in remote URLs, headers and environment variables)."""

from __future__ import annotations

import re

MASK = "***"

# userinfo in a URL.  With a colon (user:password) anything up to the last '@' before whitespace or a quote is
# hidden, since people do write passwords with '/', '?' and '@' unescaped; without one, a bare user or token.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^\s@/?#:]*:[^\s'\"]*|[^\s@/?#]+)@")
# The scp-like form git also takes, user:password@host:path (no scheme), whose password no URL pattern sees.  Only a
# user *with* a password is hidden: git@github.com:o/r.git names no secret.
_SCP_USERINFO = re.compile(r"(?<![^\s'\"=(<\[])([^\s@/:'\"=]+):[^\s'\"]*@(?=[A-Za-z0-9.\[\]-]+:)")
# Query parameters that carry credentials (GitLab's private_token, OAuth's access_token, signed URLs' sig, …).
_QUERY_SECRET = re.compile(
    r"(?i)([?&;](?:access_token|private_token|token|auth|key|api_key|apikey|password|passwd|pwd|secret|sig|"
    r"signature|client_secret|x-amz-signature|x-amz-credential)=)[^&#\s'\"]+"
)
_AUTH_HEADER = re.compile(r"(?i)(authorization:\s*(?:basic|bearer|token)?\s*)[^\s'\"]+")
# NAME=value where the name says it is a secret (GITHUB_TOKEN=…, STATEFILE_PASSWORD=…), as in a printed env.
_SECRET_ASSIGNMENT = re.compile(r"\b([A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY)[A-Za-z0-9_]*=)[^\s'\"]+")
# The same in any case (a server hook's chatter: password=hunter2, github_token=…), but only where the name's last
# word is the secret's: max_tokens=8192 and tokenizer=bpe are a loop's ordinary notes, not credentials.
_SECRET_KEY = re.compile(
    r"(?i)(?<![A-Za-z0-9_])((?:[A-Za-z0-9]+[_-])*(?:password|passwd|pwd|secret|api[_-]?key|token|passphrase)=)"
    r"[^\s'\"&]+"
)
# Tokens whose shape says what they are: GitHub's, and GitLab's personal tokens.
_KNOWN_TOKEN = re.compile(r"\b(?:gh[pousr]_|github_pat_|glpat-)[A-Za-z0-9_-]{10,}")


def redact(text: str) -> str:
    """``text`` with every credential the patterns above know replaced by ``***``."""
    text = _SCP_USERINFO.sub(rf"\1:{MASK}@", _URL_USERINFO.sub(rf"\1{MASK}@", text))
    for pattern in (_QUERY_SECRET, _AUTH_HEADER, _SECRET_ASSIGNMENT, _SECRET_KEY):  # in this order
        text = pattern.sub(rf"\1{MASK}", text)
    return _KNOWN_TOKEN.sub(MASK, text)


def redact_value(value: object) -> object:
    """A setting's value as it may be printed: strings redacted, tuples item by item, anything else as is."""
    if isinstance(value, tuple):
        return tuple(redact_value(item) for item in value)
    return redact(value) if isinstance(value, str) else value
