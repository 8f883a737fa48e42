"""No secret reaches output: redaction of every shape a credential takes, and `statefile config` through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from statefile.cli.run import shown
from statefile.redaction import redact, redact_value


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("https://user:pa/ss@github.com/o/r.git", "pa/ss"),
        ("https://user:p@ss/w?rd@github.com/o/r.git", "ss/w?rd"),
        ("https://github.com/o/r.git?access_token=abc123def456", "abc123def456"),
        ("https://gitlab.example.com/api?private_token=glpat-xxxxxxxxxxxxxxxxxxxx&x=1", "glpat-xxxx"),
        ("https://s3.example.com/f?X-Amz-Signature=deadbeefcafe", "deadbeefcafe"),
        ("GITHUB_TOKEN=ghs_0123456789abcdefghij", "ghs_0123456789"),
        ("env: MY_API_KEY=sk-live-123456 was set", "sk-live-123456"),
        ("STATEFILE_REMOTE=https://user:tok3n@github.com/o/r", "tok3n"),
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi"),
        ("glpat-abcdefghij1234567890 in a message", "glpat-abcdefghij"),
    ],
)
def test_every_shape_of_credential_is_hidden(text: str, secret: str) -> None:
    assert secret not in redact(text)
    assert "***" in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "git push failed: rejected https://github.com/o/r.git (fetch first); user@example.com",
        "https://github.com/o/r/actions/runs/123?check_suite_focus=true",
        "Best Metric moved to 0.93; MAX_BYTES=30720",
        "see https://example.com/docs#token-section",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


@settings(max_examples=examples(200))
@given(
    user=st.text(alphabet=st.characters(whitelist_categories=["L", "N"]), min_size=1, max_size=12),
    secret=st.text(
        alphabet=st.characters(blacklist_categories=["Cs", "Zs", "Cc"], blacklist_characters="@"),
        min_size=6,
        max_size=30,
    ),
)
def test_a_password_of_any_shape_in_a_url_is_hidden(user: str, secret: str) -> None:
    text = f"fatal: unable to access 'https://{user}:{secret}@github.com/o/r.git/'"
    assert f":{secret}@" not in redact(text)


def test_values_are_redacted_inside_tuples() -> None:
    assert redact_value(("https://u:pw123456@h/r", 5)) == ("https://***@h/r", 5)
    assert redact_value(30720) == 30720


def _config(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "statefile", *args],
        cwd=cwd,
        env={**env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_config_never_prints_a_remote_credential(tmp_path: Path, as_json: bool) -> None:
    """Issue 15 #4: a token in STATEFILE_REMOTE or .statefile.toml was printed in full by `statefile config`."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".statefile.toml").write_text('remote = "https://bot:t0ml/Secret?x@github.com/o/r.git"\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    args = ["--json", "config"] if as_json else ["config"]
    from_toml = _config(tmp_path, *args, env=env)
    from_env = _config(
        tmp_path, *args, env={**env, "STATEFILE_REMOTE": "https://user:tok3n/x@github.com/o/r?access_token=zz99zz99"}
    )
    for proc, secrets in ((from_toml, ["t0ml/Secret"]), (from_env, ["tok3n/x", "zz99zz99"])):
        assert proc.returncode == 0, proc.stderr
        for secret in secrets:
            assert secret not in proc.stdout + proc.stderr
        if as_json:
            remote = next(row for row in json.loads(proc.stdout) if row["key"] == "remote")
            assert "***" in remote["value"]


def test_secrets_in_any_case_are_redacted() -> None:
    """Found by the cold review of issue 15: secrets in any case are redacted."""
    assert redact("password=hunter2 Api_Key=k1 github_token=t2") == "password=*** Api_Key=*** github_token=***"
    # A loop's ordinary notes are left alone: the name must end in the secret's word.
    notes = "max_tokens=8192 tokenizer=bpe num_tokens=3 token_budget=900 llm -o max_tokens=400"
    assert redact(notes) == notes
    assert shown("a\x1b[2Jb\u2066c") == "a\\x1b[2Jb\\u2066c"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("tok:ScpSecret3w@127.0.0.1:o/r.git", "ScpSecret3w"),
        ("invalid remote name 'me:pa/ss@host.example.com:o/r.git'", "pa/ss"),
    ],
)
def test_a_password_in_gits_scp_form_is_hidden(text: str, secret: str) -> None:
    """Found by the hostile run (issue 15): a password in gits scp form is hidden."""
    assert secret not in redact(text) and "***" in redact(text)


def test_the_scp_form_without_a_password_is_left_alone() -> None:
    """Found by the hostile run (issue 15): the scp form without a password is left alone."""
    assert redact("git@github.com:o/r.git") == "git@github.com:o/r.git"
