"""Output for people: plain values, plurals, aligned tables, colour only on a terminal, one size parser."""

from __future__ import annotations

import io
from decimal import Decimal

import click
import pytest
from conftest import GuardRepo, guard_run, only_error_line
from gitutil import Repos, run_statefile

from statefile.cli.run import SIZE, colour_enabled
from statefile.cli.support import display_width, plain, table
from statefile.defaults import parse_size
from statefile.errors import EXIT_USAGE
from statefile.numbers import plural


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "—"),
        ("", "—"),
        (True, "yes"),
        (False, "no"),
        (["accepted", "error"], "accepted, error"),
        ([], "—"),
        (3.0, "3"),
        (0.1, "0.1"),
        (Decimal("1.50"), "1.5"),
        (42, "42"),
        ("text", "text"),
    ],
)
def test_plain_values_read_as_words_not_python(value: object, shown: str) -> None:
    assert plain(value) == shown


def test_plurals_agree_with_their_count() -> None:
    assert plural(1, "iteration") == "1 iteration"
    assert plural(0, "part") == "0 parts"
    assert plural(2, "entry", "entries") == "2 entries"
    assert plural(1234, "byte") == "1,234 bytes"


def test_table_aligns_columns_whatever_the_widths() -> None:
    lines = table([["a", 1507, None], ["perf-comparison", 12, True]], ["PROGRAM", "BYTES", "PAUSED"])
    assert lines == [
        "PROGRAM          BYTES  PAUSED",
        "a                 1507  —",
        "perf-comparison     12  yes",
    ]
    # Every row's columns start at the same terminal column, emoji and dashes included.
    wide = table([["✅ ok", "x"], ["—", "y"]], ["STATUS", "V"])
    starts = {display_width(line[: line.index(v)]) for line, v in zip(wide[1:], "xy", strict=True)}
    assert len(starts) == 1
    assert all(line == line.rstrip() for line in lines + wide)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    assert colour_enabled(_Tty(), env={}) is True
    assert colour_enabled(io.StringIO(), env={}) is False
    assert colour_enabled(_Tty(), env={"NO_COLOR": "1"}) is False
    assert colour_enabled(_Tty(), env={"TERM": "dumb"}) is False


@pytest.mark.parametrize("raw", ["30KB", "30720", "30kib", " 30 KB "])
def test_sizes_on_the_command_line_parse_like_the_config(raw: str) -> None:
    assert SIZE.convert(raw, None, None) == parse_size(raw) == 30720


def test_a_bad_size_is_a_usage_error_naming_the_example() -> None:
    with pytest.raises(click.BadParameter, match="30KB"):
        SIZE.convert("thirty", None, None)


def test_sizes_like_30kb_work_on_the_command_line(guard_repo: GuardRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """Guard rail (issue 13): sizes like 30kb work on the command line; the memory is left exactly as it was."""
    for args in (
        ["--max-bytes", "30KB", "check"],
        ["check", "--max-bytes", "30KB"],
        ["compact", "perf", "--max-bytes", "20KB", "--dry-run"],
    ):
        result = guard_run(capsys, "--remote", "origin", *args)
        assert result.code == 0, (args, result.err)
    bad = guard_run(capsys, "--max-bytes", "thirty", "check")
    assert bad.code == 2 and "30KB" in bad.err


@pytest.mark.parametrize("raw", ["9" * 309, "9" * 307 + "KB"], ids=["309-digits", "307-digits-KB"])
def test_an_absurd_max_bytes_is_a_usage_error(initialized_repos: Repos, raw: str) -> None:
    """float() made 309 nines infinity: OverflowError, exit 70."""
    proc = run_statefile("--max-bytes", raw, "list", cwd=initialized_repos.work)
    assert proc.returncode == EXIT_USAGE and "at most 1,073,741,824 bytes (1 GiB)" in only_error_line(proc)
