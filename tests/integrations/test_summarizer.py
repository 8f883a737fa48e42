"""command_summarizer with real commands: good, failing, slow, verbose, multi-line, odd output, never a shell."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXED_NOW

from statefile.app.context import resolve_config
from statefile.app.writing import compaction_policy
from statefile.defaults import SUMMARIZER_TIMEOUT, SUMMARY_CAP
from statefile.errors import UsageError
from statefile.integrations.summarizer import command_summarizer
from statefile.policy.compaction import CompactionPolicy

ENTRIES = [
    {"number": 4, "when": "2026-01-01 10:00", "status": "accepted", "metric": "12", "change": "cache", "notes": "ok"},
    {"number": 5, "when": "2026-01-02 10:00", "status": "rejected", "metric": "11", "change": "café", "notes": None},
]


def py(code: str, *args: str) -> str:
    """A command line running ``code`` with this Python (quoted for shlex)."""
    return shlex.join([sys.executable, "-c", code, *args])


def test_good_command_reads_json_from_stdin() -> None:
    code = (
        "import json, sys; e = json.load(sys.stdin); "
        'span = f\' (#{e[0]["number"]}–{e[-1]["number"]})\'; '
        "print(f'{len(e)} entries: ' + ', '.join(x['change'] for x in e) + span)"
    )
    summarize = command_summarizer(py(code))
    assert summarize(ENTRIES) == "2 entries: cache, café (#4–5)"
    assert summarize.last_reason is None


def test_failing_command_falls_back_with_reason() -> None:
    summarize = command_summarizer(
        py("import sys; print('partial'); sys.stderr.write('model unavailable\\n'); sys.exit(3)")
    )
    assert summarize(ENTRIES) is None
    assert summarize.last_reason == "exited with status 3: model unavailable"


@pytest.mark.slow  # fault injection: waits out a remote that stalls, a stale lock or a timeout
def test_slow_command_is_killed_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    code = (
        "import subprocess, sys, time; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(child.pid)); "
        "time.sleep(60)"
    )
    summarize = command_summarizer(py(code), timeout=1.0)
    started = time.monotonic()
    assert summarize(ENTRIES) is None
    assert time.monotonic() - started < 10
    assert summarize.last_reason == "timed out after 1s"
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def test_verbose_command_is_stopped_early() -> None:
    summarize = command_summarizer(py("import sys\nwhile True: sys.stdout.write('x' * 65536)"), timeout=20)
    started = time.monotonic()
    assert summarize(ENTRIES) is None
    assert time.monotonic() - started < 10
    assert summarize.last_reason == "printed more than 160 characters"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("print('first line'); print('second line')", "printed more than one line"),
        ("print('one\\rtwo')", "printed more than one line"),
        ("pass", "printed nothing"),
        ("print('   ')", "printed nothing"),
        ("print('x' * 160)", "printed 160 characters; the cap is 160"),
        ("print('\\x1b[31mred\\x1b[0m')", "printed control characters"),
    ],
)
def test_unusable_output_falls_back(code: str, reason: str) -> None:
    summarize = command_summarizer(py(code))
    assert summarize(ENTRIES) is None
    assert summarize.last_reason == reason


def test_cap_and_trailing_newline() -> None:
    assert command_summarizer(py("print('y' * 159)"))(ENTRIES) == "y" * 159
    assert command_summarizer(py("import sys; sys.stdout.write('  tidy  \\r\\n')"))(ENTRIES) == "tidy"
    assert command_summarizer(py("print('z' * 20)"), cap=20)(ENTRIES) is None


def test_command_that_ignores_a_large_stdin() -> None:
    big = [dict(ENTRIES[0], notes="n" * 1000, number=n) for n in range(2000)]  # ~2 MB of JSON
    summarize = command_summarizer(py("print('did not read')"))
    assert summarize(big) == "did not read"


def test_never_a_shell() -> None:
    echo = py("import sys; print(' '.join(sys.argv[1:]))")
    summarize = command_summarizer(echo + " '$HOME' ';' 'rm -rf x' '|' cat")
    assert summarize(ENTRIES) == "$HOME ; rm -rf x | cat"


def test_surrogates_in_entries_are_sent_as_escaped_json() -> None:
    code = "import json, sys; print(json.load(sys.stdin)[0]['notes'] == '\\udcff')"
    assert command_summarizer(py(code))([{"notes": "\udcff"}]) == "True"


def test_missing_command() -> None:
    summarize = command_summarizer("statefile-no-such-summarizer --flag")
    assert summarize(ENTRIES) is None
    assert summarize.last_reason is not None
    assert summarize.last_reason.startswith("cannot start 'statefile-no-such-summarizer'")


def test_bad_commands_and_settings_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="check its quotes"):
        command_summarizer("llm 'unbalanced")
    with pytest.raises(UsageError, match="empty --summarizer"):
        command_summarizer("   ")
    with pytest.raises(UsageError, match="timeout must be positive"):
        command_summarizer("x", timeout=0)
    with pytest.raises(UsageError, match="cap must be at least 1"):
        command_summarizer("x", cap=0)
    assert "timeout=30" in repr(command_summarizer("llm -m fast"))


def test_plugs_into_compaction_and_falls_back() -> None:
    """A failing or verbose summarizer leaves compaction's deterministic range summary in place."""
    from synthetic import synthetic_state

    from statefile.model.document import parse
    from statefile.policy.compaction import CompactionPolicy, compact

    doc_text = synthetic_state("perf", iterations=30, seed=1)
    results = {}
    for name, cmd in {
        "none": None,
        "failing": py("import sys; sys.exit(1)"),
        "verbose": py("print('a\\nb')"),
        "good": py("print('agent summary')"),
    }.items():
        policy = CompactionPolicy(max_bytes=30720, summarizer=command_summarizer(cmd) if cmd else None)
        results[name] = compact(parse(doc_text), policy).document.render()
    assert results["none"] != doc_text  # entries were folded into a range line
    assert results["failing"] == results["none"] == results["verbose"]
    assert "agent summary" in results["good"]


def test_summarizer_defaults_come_from_one_definition() -> None:
    """As seen in issue 11: summarizer defaults come from one definition."""
    config = resolve_config(None, {"summarizer": "llm-summarize"}, {})
    assert config.summarizer_timeout.value == SUMMARIZER_TIMEOUT
    summarizer = compaction_policy(config, now=FIXED_NOW).summarizer
    assert summarizer is not None and repr(summarizer) == repr(command_summarizer("llm-summarize"))
    assert f"timeout={SUMMARIZER_TIMEOUT:g}, cap={SUMMARY_CAP}" in repr(summarizer)
    assert CompactionPolicy().summary_cap == SUMMARY_CAP
