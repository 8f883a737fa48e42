"""What a command prints never drives the terminal: state files hold text that AI agents and hand edits wrote, so
every character a terminal acts on (ESC sequences that recolour, retitle or move the cursor; BEL; NUL; C1 controls
such as the one-byte CSI; bidi overrides and isolates that reorder what is read) is printed escaped (``\\x1b``,
``\\u202e``), in every command's output for people, on stdout and on stderr.  The text around it still reads.

``--json`` stays valid JSON that decodes to the stored text, with those characters ``\\u``-escaped; a file written
with ``--out`` is data, written byte for byte.

One prepared repository per module (a bare remote and a clone whose memory branch holds a hostile ``perf``, and
``latency``, the same without NUL, which git diffs as text), a copy for each test; every command runs in-process
through :func:`statefile.cli.run.invoke`, as the console script does.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import pinned_identity
from gitutil import Ran, git, make_repos
from synthetic import synthetic_state

from statefile.cli import cli
from statefile.cli.run import invoke
from statefile.store import Store

#: An SGR colour and its reset, an OSC window title ended by BEL, NUL, the one-byte C1 CSI and OSC, a right-to-left
#: override and a bidi isolate: each followed by a word that must still be read.
HOSTILE = "\x1b[31mRED\x1b[0m \x1b]0;TITLE\x07 NUL\x00X CSI\x9bY OSC\x9dQ RLO\u202eZ ISO\u2066W\u2069 BEL\x07B"
#: What must never reach the terminal raw.
RAW = ("\x1b", "\x07", "\x00", "\x9b", "\x9d", "\u202e", "\u2066", "\u2069")
#: What must still be read around them.
WORDS = ("RED", "TITLE", "NUL", "CSI", "RLO", "ISO")
#: A commit message cannot hold NUL (git refuses it); everything else goes in.
MESSAGE = "seed " + HOSTILE.replace("\x00", "")


def hostile_state() -> str:
    """``perf`` with the hostile text in Machine State cells, a priority, a lesson, a section title and history."""
    text = synthetic_state("perf", 3, seed=1, lessons=2)
    replacements = {
        "| Last Run | 2026-01-01T10:31:00Z |": f"| Last Run | 2026-01-01T10:31:00Z {HOSTILE} |",
        "| Pause Reason | — |": f"| Pause Reason | PAUSE {HOSTILE} |",
        "| Completed Reason | — |": f"| Completed Reason | DONE {HOSTILE} |",
        "*(No specific priorities set — agent is exploring freely.)*": f"- PRIORITY {HOSTILE}",
        "- Run the full benchmark twice; single runs of the sort": f"- LESSON {HOSTILE}\tsort",
        "## 🔭 Future Directions": f"## SCRATCH {HOSTILE}\n\nscratch words\n\n---\n\n## 🔭 Future Directions",
        "Inline the CSV tokenizer": f"CHANGE {HOSTILE}",
        "Memoize null-mask propagation": f"OTHER {HOSTILE}",
        "Type checker flagged an unsafe cast.": f"NOTE {HOSTILE}",
    }
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare remote and a work clone; memory/autoloop holds the hostile perf, perf.md is in the work tree too."""
    root = tmp_path_factory.mktemp("terminal")
    with pinned_identity(tmp_path_factory):
        repos = make_repos(root)
        git("remote", "set-url", "origin", "../remote.git", cwd=repos.work)  # copies of root keep working
        with Store.open(repos.work, remote="origin") as store:
            store.write_files({"perf.md": hostile_state()}, MESSAGE)
            # Without NUL, git diffs it as text (a NUL makes perf.md a binary file to `git diff`).
            store.write_files({"latency.md": hostile_state().replace("\x00", "").replace("perf", "latency")}, MESSAGE)
        (repos.work / "perf.md").write_bytes(hostile_state().encode("utf-8"))
    return root


@pytest.fixture
def work(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "copy"
    shutil.copytree(template, root, symlinks=True)
    monkeypatch.chdir(root / "work")
    for key in ("STATEFILE_REMOTE", "STATEFILE_BRANCH", "STATEFILE_DIR", "STATEFILE_JSON", "STATEFILE_QUIET",
                "STATEFILE_SUMMARIZER", "STATEFILE_AUTOLOOP_JSON"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")  # history cuts CHANGE to the terminal's width
    yield root / "work"


def sf(capsys: pytest.CaptureFixture[str], *args: str) -> Ran:
    """Run a command in-process, exactly as the console script does (statefile.cli.main → invoke)."""
    capsys.readouterr()
    code = invoke(cli, ["--remote", "origin", *args])
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


#: How each hostile character is spelled in output for people.
SPELLED = {"\\x1b": "\x1b", "\\x07": "\x07", "\\x00": "\x00", "\\x9b": "\x9b", "\\x9d": "\x9d",
           "\\u202e": "\u202e", "\\u2066": "\u2066", "\\u2069": "\u2069"}  # fmt: skip


def unescaped(text: str) -> str:
    """Printed text with the hostile characters' spellings turned back into them."""
    for spelling, raw in SPELLED.items():
        text = text.replace(spelling, raw)
    return text


def assert_no_raw_controls(text: str) -> None:
    found = sorted({f"U+{ord(ch):04X}" for ch in text if ch in RAW})
    assert not found, f"raw control characters {found} in:\n{text!r}"


# -- output for people ------------------------------------------------------------------------------------------------

#: Each read command, and a word of the hostile text's neighbourhood that its output shows.
READS = [
    (["show", "perf"], "PAUSE"),
    (["show", "perf.md"], "DONE"),
    (["list"], "2026-01-01T10:31:00Z"),
    (["log", "perf"], "seed"),
    (["log", "perf", "-p"], "seed"),
    (["log", "latency", "-p"], "+- LESSON"),
    (["render", "perf"], "PRIORITY"),
    (["render", "perf", "--level", "index"], "PRIORITY"),
    (["expand", "perf", "3"], "NOTE"),
    (["search", "LESSON"], "LESSON"),
    (["search", "CHANGE", "--program", "perf"], "CHANGE"),
    (["status"], "SCRATCH"),
    (["status", "perf"], "SCRATCH"),
    (["history", "perf"], "CHANGE"),
    (["history", "perf", "--csv"], "OTHER"),
    (["summary"], "2026-01-01T10:31:00Z"),
    (["summary", "perf"], "2026-01-01T10:31:00Z"),
]


@pytest.mark.parametrize(("args", "near"), READS, ids=[" ".join(args) for args, _ in READS])
def test_read_commands_print_control_characters_escaped(
    work: Path, capsys: pytest.CaptureFixture[str], args: list[str], near: str
) -> None:
    result = sf(capsys, *args)
    assert result.code == 0, result.err
    assert_no_raw_controls(result.out + result.err)
    assert near in result.out
    # The hostile text is still there to read, its controls spelled out.
    for word in WORDS:
        assert word in result.out, (word, result.out)
    assert "\\u202e" in result.out and ("\\x1b" in result.out or "\\x9b" in result.out), result.out


def test_config_prints_a_setting_with_control_characters_escaped(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATEFILE_SUMMARIZER", "echo " + HOSTILE.replace("\x00", ""))
    result = sf(capsys, "config")
    assert result.code == 0, result.err
    assert_no_raw_controls(result.out + result.err)
    assert "echo \\x1b[31mRED\\x1b[0m \\x1b]0;TITLE\\x07" in result.out
    # The columns still line up: the summarizer's source starts under SOURCE, as every other row's does.
    lines = result.out.splitlines()
    row = next(line for line in lines if line.startswith("summarizer "))
    assert row.index("env STATEFILE_SUMMARIZER") == lines[0].index("SOURCE"), result.out


def test_multi_line_output_keeps_its_newlines_and_tabs(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """render and expand print whole markdown: lines stay lines and a tab stays a tab; only controls are spelled."""
    rendered = sf(capsys, "render", "perf")
    assert rendered.code == 0, rendered.err
    assert_no_raw_controls(rendered.out)
    assert "- LESSON \\x1b[31mRED\\x1b[0m \\x1b]0;TITLE\\x07 NUL\\x00X CSI\\x9bY OSC\\x9dQ RLO\\u202eZ" in rendered.out
    assert "ISO\\u2066W\\u2069 BEL\\x07B\tsort" in rendered.out
    assert rendered.out.count("\n") > 20
    expanded = sf(capsys, "expand", "perf", "3")
    assert expanded.code == 0, expanded.err
    assert_no_raw_controls(expanded.out)
    assert expanded.out.startswith("### Iteration 3 ")
    assert "\n- **Change**: CHANGE \\x1b[31mRED" in expanded.out
    assert "\n- **Notes**: NOTE \\x1b[31mRED" in expanded.out


def test_a_table_counts_an_escaped_cell_by_what_it_prints(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """list's columns line up after a hostile LAST RUN: the width is that of the escaped text."""
    result = sf(capsys, "list")
    assert result.code == 0, result.err
    assert_no_raw_controls(result.out)
    header, row = result.out.splitlines()[:2]
    assert row.index("accepted") == header.index("STATUS"), result.out


# -- JSON and files ------------------------------------------------------------------------------------------------

JSONS = [
    ["show", "perf", "--json"],
    ["list", "--json"],
    ["log", "perf", "--json"],
    ["render", "perf", "--json"],
    ["expand", "perf", "3", "--json"],
    ["search", "LESSON", "--json"],
    ["status", "--json"],
    ["status", "perf", "--json"],
    ["history", "perf", "--json"],
    ["report"],
    ["export"],
]


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


@pytest.mark.parametrize("args", JSONS, ids=[" ".join(args) for args in JSONS])
def test_json_output_escapes_every_control_and_still_decodes_to_the_stored_text(
    work: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    result = sf(capsys, *args)
    assert result.code == 0, result.err
    assert_no_raw_controls(result.out + result.err)
    data = json.loads(result.out)
    # The values are the stored text, character for character: only their spelling in the JSON changed.
    assert any("CSI\x9bY OSC\x9dQ RLO\u202eZ" in text for text in _strings(data)), result.out
    assert "\\u009b" in result.out and "\\u202e" in result.out
    assert "\\u2014" not in result.out and "\\u2699" not in result.out  # other non-ASCII text stays readable


def test_summary_prints_escaped_but_appends_its_out_file_byte_for_byte(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = sf(capsys, "summary", "perf")
    assert printed.code == 0, printed.err
    assert_no_raw_controls(printed.out)
    out = work.parent / "summary.md"
    written = sf(capsys, "summary", "perf", "--out", str(out))
    assert written.code == 0, written.err
    assert_no_raw_controls(written.out + written.err)
    data = out.read_bytes().decode("utf-8")
    assert HOSTILE in data  # the file is data: the stored text exactly
    assert data == unescaped(printed.out) + "\n"


def test_export_prints_escaped_json_and_writes_its_out_file_as_before(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = sf(capsys, "export")
    assert printed.code == 0, printed.err
    assert_no_raw_controls(printed.out)
    out = work.parent / "memory.json"
    written = sf(capsys, "export", "--out", str(out))
    assert written.code == 0, written.err
    data = out.read_bytes().decode("utf-8")
    assert "\u202e" in data and "\x9b" in data  # ensure_ascii=False: the file keeps its characters as they are
    assert json.loads(data) == json.loads(printed.out)
    # What was printed imports back to the same memory, byte for byte.
    (work.parent / "printed.json").write_text(printed.out, encoding="utf-8")
    restored = sf(capsys, "--branch", "memory/restored", "import", str(work.parent / "printed.json"))
    assert restored.code == 0, restored.err
    with Store.open(work, branch="memory/restored", remote="origin") as store:
        assert store.read_text("perf") == hostile_state()
