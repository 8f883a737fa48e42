"""Every failure is one line on stderr: click's usage errors too, with where to look; long inputs are cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from statefile.cli import cli
from statefile.cli.run import invoke, shown
from statefile.errors import EXIT_USAGE


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["record"], ["Missing argument 'PROGRAM'", "see 'statefile record --help'"]),
        (["recrod", "perf"], ["no command 'recrod'", "did you mean 'record'", "see 'statefile --help'"]),
        (["record", "perf", "--stauts", "x"], ["--stauts", "'--status'", "see 'statefile record --help'"]),
        (["lesson", "ad", "perf", "x"], ["'ad'", "see 'statefile lesson --help'"]),
        (["render", "perf", "--budget", "10"], ["--budget", "see 'statefile render --help'"]),
    ],
)
def test_usage_errors_are_one_line_saying_where_to_look(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    needles: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke(cli, args) == EXIT_USAGE
    out, err = capfd.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("statefile: error: "), err
    for needle in needles:
        assert needle in err


def test_a_huge_input_is_cut_in_the_message(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    name = "a" * 100_000
    code = invoke(cli, ["--dir", str(tmp_path), "show", name])
    _, err = capfd.readouterr()
    assert code != 0 and len(err.splitlines()) == 1
    # Cut either by the message itself (names.py says "… (100000 characters)") or by shown() ("[… more]").
    assert len(err) < 600 and ("more]" in err or "(100000 characters)" in err), err


def test_shown_cuts_only_long_words_and_keeps_the_advice() -> None:
    message = f"no program '{'x' * 5000}'; 'statefile list' shows the programs"
    assert shown(message).endswith("'statefile list' shows the programs")
    assert shown("short words stay as they are") == "short words stay as they are"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["log", "perf", "-n", "abc"], "'--limit' / '-n'"),
        (["history", "perf", "-n", "1.5"], "'--last' / '-n'"),
        (["search", "x", "-n", "ten"], "'--limit' / '-n'"),
        (["expand", "perf", "x7"], "'ITERATION'"),
        (["record", "perf", "--status", "accepted", "--iteration", "9" * 5000], "'--iteration'"),
    ],
)
def test_a_number_that_is_not_one_is_said_in_words(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], option: str
) -> None:
    """As seen: `log perf -n abc` said click's "'abc' is not a valid integer range"."""
    monkeypatch.chdir(tmp_path)
    assert invoke(cli, args) == EXIT_USAGE
    _, err = capfd.readouterr()
    assert len(err.splitlines()) == 1 and option in err and "give one such as" in err, err
    # A long run of digits is a number: it is called too long, not "not a whole number".
    assert ("digits, far beyond any count" if "9" * 200 in " ".join(args) else "is not a whole number") in err, err
    assert "integer range" not in err and len(err) < 300


@pytest.mark.parametrize("command", [["log", "perf"], ["show", "perf"], ["expand", "perf", "1"]])
def test_a_program_name_cut_short_gets_a_did_you_mean(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """As seen: `log perf` beside perf-comparison said only "no program 'perf'"."""
    (tmp_path / "perf-comparison.md").write_text("# Autoloop: perf-comparison\n")
    (tmp_path / "latency.md").write_text("# Autoloop: latency\n")
    assert invoke(cli, ["--dir", str(tmp_path), *command]) == 3
    _, err = capfd.readouterr()
    assert len(err.splitlines()) == 1 and "no program 'perf' (did you mean 'perf-comparison'?)" in err, err
