"""The README and docs/ say what is true: every code block is run or checked, every link resolves.

- README.md fits about one screen (at most 120 lines); the reference material is under docs/.
- Every fenced block in README.md and docs/*.md has a language, and each language is checked here: ``python``
  blocks run (their asserts are what their comments promise), each ``statefile …`` line of a ``bash`` block is
  parsed by the CLI itself (command, options, argument counts; the README's "By hand" block also runs against the
  prepared repository of tests/cli/test_help_examples.py), ``json``/``yaml``/``toml`` blocks parse (and the command
  lines or settings they hold are checked too), ``markdown`` blocks are compared with what statefile writes.
  :data:`UNCHECKED` lists the only language that is not, with why.
- The agent-output example of docs/gh-aw.md runs, as written, through ``statefile apply`` against a bare remote.
- Every link resolves: relative links name a file that exists and, with ``#anchor``, a heading of that file as
  GitHub slugifies it; external ``http(s)`` links are only checked for syntax (no network here).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import click
import pytest
import yaml
from cli import test_help_examples as help_examples
from gitutil import make_repos
from upstream import upstream_machine_state

import statefile
from statefile.app.context import option_docs, resolve_config
from statefile.cli import COMMANDS, cli
from statefile.cli.run import invoke

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the package's own dependency on 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
#: Block languages that are not checked, and why.
UNCHECKED = {"text": "a layout sketch with placeholders ({program}, {UTC time}), neither data nor a command"}
CHECKED = {"bash", "python", "json", "yaml", "toml", "markdown"}
#: Commands in bash blocks that are not statefile, and why they are not run here (what is checked instead).
OTHER_COMMANDS = {
    "python3 -m venv": "makes a virtualenv; the quickstart's commands need the network (PyPI)",
    "pip install": "needs the network; tests/e2e/test_quickstart.py and tests/test_release.py check the install lines",
    "python -m pytest": "the test suite itself; the test files it names must exist",
    "ruff": "the linters, which the suite runs (tests/test_types.py and the lint tests)",
    "mypy": "the type checker, which the suite runs",
}

# The prepared repository of tests/cli/test_help_examples.py (a bare remote, a clone, `perf` with 60 iterations).
template = help_examples.template


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_FENCE = re.compile(r"^( *)```(\w*)[^\n]*\n(.*?)^\1```[ \t]*$", re.M | re.S)


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match.group(1))
        body = "".join(line[indent:] for line in match.group(3).splitlines(keepends=True))
        found.append(Block(path, text.count("\n", 0, match.start()) + 1, match.group(2), body))
    return found


ALL_BLOCKS = [block for path in DOCS for block in blocks(path)]


def of(lang: str, path: Path | None = None) -> list[Block]:
    return [b for b in ALL_BLOCKS if b.lang == lang and (path is None or b.path == path)]


def ids(found: list[Block]) -> list[str]:
    return [b.where for b in found]


def test_readme_fits_one_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 120, f"README.md has {len(lines)} lines: move reference material under docs/"


def test_every_block_has_a_language_this_test_checks() -> None:
    assert ALL_BLOCKS and (ROOT / "docs").is_dir()
    for block in ALL_BLOCKS:
        assert block.lang in CHECKED | set(UNCHECKED), f"{block.where}: a ```{block.lang} block nothing checks"


# -- shell ------------------------------------------------------------------------------------------------------


def shell_commands(block: Block) -> list[list[str]]:
    """The simple commands of a bash block: continuation lines joined, comments dropped, split at && || ; |."""
    commands: list[list[str]] = []
    for line in block.text.replace("\\\n", " ").splitlines():
        current: list[str] = []
        for word in shlex.split(line, comments=True):
            if word in ("&&", "||", ";", "|"):
                commands.append(current)
                current = []
            else:
                current.append(word)
        commands.append(current)
    return [command for command in commands if command]


def is_statefile(words: list[str]) -> bool:
    return Path(words[0]).name == "statefile"


def without_assignments(words: list[str]) -> list[str]:
    while words and re.match(r"^[A-Z_]+=", words[0]):
        words = words[1:]
    return words


def parse_with_the_cli(args: list[str]) -> None:
    """Parse ``statefile ARGS`` as the CLI would, down to the (sub)command: unknown commands or options, missing
    or extra arguments and bad values raise click's UsageError.  Nothing runs."""
    try:
        with cli.make_context("statefile", list(args)) as ctx:
            group: click.Group = cli
            while True:
                rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
                assert rest, f"statefile {shlex.join(args)}: no command"
                name, command, rest = group.resolve_command(ctx, rest)
                assert name is not None and command is not None
                ctx = command.make_context(name, rest, parent=ctx)
                if not isinstance(command, click.Group):
                    return
                group = command
    except click.exceptions.Exit as done:  # --help, --version
        assert done.exit_code == 0


SHELL = of("bash")


@pytest.mark.parametrize("block", SHELL, ids=ids(SHELL))
def test_shell_blocks_are_commands_that_exist(block: Block) -> None:
    for words in shell_commands(block):
        words = without_assignments(words)
        if is_statefile(words):
            parse_with_the_cli(words[1:])
            continue
        line = " ".join(Path(w).name if i == 0 else w for i, w in enumerate(words))
        known = [name for name in OTHER_COMMANDS if name in line]
        assert known, f"{block.where}: `{shlex.join(words)}` is neither statefile nor a command listed here"
        for word in words:  # a test or script it names exists
            if re.fullmatch(r"(tests|benchmarks)/[\w/.-]+\.py", word):
                assert (ROOT / word).is_file(), f"{block.where}: {word} does not exist"


def test_the_cli_parse_catches_what_it_should() -> None:
    parse_with_the_cli(["--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "0.93"])
    parse_with_the_cli(["lesson", "add", "perf", "text", "--json"])
    for bad in (["recrod", "perf"], ["record", "perf", "--no-such-option"], ["expand", "perf"],
                ["lesson", "nope"], ["--max-bytes", "lots", "check"]):  # fmt: skip
        with pytest.raises(click.UsageError):
            parse_with_the_cli(bad)


def _readme_by_hand() -> list[str]:
    [block] = [b for b in of("bash", README) if b.text.startswith("statefile list")]
    return [shlex.join(words) for words in shell_commands(block)]


@pytest.mark.parametrize("line", _readme_by_hand())
def test_the_readmes_by_hand_commands_run(
    line: str,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As tests/cli/test_help_examples.py runs every help example: in a copy of the prepared clone, exit 0."""
    monkeypatch.setenv("EDITOR", "true")  # `statefile edit perf`: nobody is there to type
    help_examples.test_help_example_runs("README", line, template, tmp_path, monkeypatch, capsys)


def test_the_quickstart_keeps_its_commands() -> None:
    """The demo line a newcomer pastes first, and the test command `.ci/run` runs (tests/e2e/test_quickstart.py)."""
    readme = [b.text.strip() for b in of("bash", README)]
    assert "python3 -m venv .venv && .venv/bin/pip install statefile && .venv/bin/statefile demo" in readme
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -n auto" in readme


# -- python -----------------------------------------------------------------------------------------------------

PYTHON = of("python")


def run_python(code: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``code`` in a clone whose ``origin`` is a bare remote, as the API page says to."""
    repos = make_repos(tmp_path)
    monkeypatch.chdir(repos.work)
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})  # the documented example itself


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_python_blocks_run_and_assert_their_comments(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Python block runs; a comment that states a value (``# doc.render() == text``) is an assert's comment."""
    for line in block.text.splitlines():
        code, _, comment = line.partition("  # ")
        assert "==" not in comment or code.lstrip().startswith("assert"), f"{block.where}: {line}"
    run_python(block.text, block.where, tmp_path, monkeypatch)
    if block.path.name == "python-api.md":  # its update reached the remote
        shown = subprocess.run(["git", "show", "memory/autoloop:perf.md"], cwd=tmp_path / "remote.git",
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert "Batch the writes" in shown and "Warm the cache before timing" in shown
        assert upstream_machine_state(shown)["paused"] is True


def test_the_api_example_catches_an_edit_that_is_thrown_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As seen: the example called copy-returning editors without keeping the copy, so its edits vanished."""
    [block] = of("python", ROOT / "docs" / "python-api.md")
    editors = re.findall(r"^doc = (doc\.(?:with_field|with_lesson|with_entry)\(.*)$", block.text, re.M)
    assert len(editors) == 3
    for index, editor in enumerate(editors):
        lossy = block.text.replace(f"doc = {editor}", editor)
        (tmp_path / str(index)).mkdir()
        with pytest.raises(AssertionError):
            run_python(lossy, block.where, tmp_path / str(index), monkeypatch)


# -- data blocks ------------------------------------------------------------------------------------------------

JSON = of("json")
YAML = of("yaml")


@pytest.mark.parametrize("block", JSON, ids=ids(JSON))
def test_json_blocks_parse(block: Block) -> None:
    data = json.loads(block.text)
    for server in data.get("mcpServers", {}).values():  # an MCP client's entry: the command it starts
        assert server["command"] == "statefile"
        parse_with_the_cli(server["args"])


@pytest.mark.parametrize("block", YAML, ids=ids(YAML))
def test_yaml_blocks_parse(block: Block) -> None:
    data = yaml.safe_load(block.text)
    assert isinstance(data, dict)
    for server in data.get("mcp-servers", {}).values():  # gh-aw's entry: the container's statefile arguments
        parse_with_the_cli(server["entrypointArgs"])
        assert set(server["allowed"]) <= {"render", "search", "expand", "history", "status", "list"}


@pytest.mark.parametrize("block", of("toml"), ids=ids(of("toml")))
def test_toml_blocks_are_settings_statefile_reads(block: Block, tmp_path: Path) -> None:
    data = tomllib.loads(block.text)
    name = block.text.splitlines()[0].lstrip("# ").strip()
    assert name == ".statefile.toml"
    (tmp_path / name).write_text(block.text, encoding="utf-8")
    config = resolve_config(tmp_path, {}, {})
    for key in data:
        assert getattr(config, key.replace("-", "_")).source.endswith(name), key
    assert config.max_bytes.value == 24 * 1024 and config.keep_recent.value == 8


def test_the_configuration_table_lists_every_setting() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    documented = {key for row in rows for key in re.findall(r"`([a-z-]+)`", row.split("|")[1])}
    assert documented == {key for key, *_ in option_docs()}
    for key, _flag, env, _default, _doc in option_docs():
        [row] = [r for r in rows if f"`{key}`" in r.split("|")[1]]
        assert env in row or env.rsplit("_", 1)[-1] in row, (key, env)


def test_the_command_table_lists_every_command() -> None:
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    listed = {m for row in text.splitlines() if row.startswith("| `") for m in re.findall(r"`(\w+)", row)}
    assert set(COMMANDS) <= listed, sorted(set(COMMANDS) - listed)


# -- markdown: what statefile writes ------------------------------------------------------------------------------


def _appears(block: Block, target: str) -> None:
    """Every line of an excerpt is a line of ``target``; a line ending in `…` is the start of one."""
    lines = target.splitlines()
    for line in block.text.splitlines():
        if line in ("", "…"):
            continue
        if line.endswith("…"):
            assert any(t.startswith(line[:-1].rstrip()) for t in lines), f"{block.where}: {line}"
        else:
            assert line in lines, f"{block.where}: {line}"


def test_compactions_examples_are_what_it_writes() -> None:
    page = ROOT / "docs" / "compaction.md"
    canonical, before, after = of("markdown", page)
    sample = (ROOT / "samples" / "mid-life.md").read_text(encoding="utf-8")
    compacted = statefile.compact(statefile.parse(sample), statefile.CompactionPolicy(keep_recent=3)).document
    _appears(before, sample)
    _appears(after, compacted.render())
    _appears(canonical, compacted.render())
    assert isinstance(statefile.parse(f"## 📊 Iteration History\n\n{canonical.text}").history[0],
                      statefile.IterationRange)  # fmt: skip
    text = page.read_text(encoding="utf-8")
    assert f"{len(sample.encode()):,} bytes" in text and f"{len(compacted.render().encode()):,} bytes" in text
    long = (ROOT / "samples" / "long-running.md").read_text(encoding="utf-8")
    folded = statefile.compact(statefile.parse(long), statefile.CompactionPolicy()).document
    assert f"({len(long.encode()):,} bytes) compacts to {len(folded.render().encode()):,} bytes" in text
    assert len(of("markdown")) == 3, "a new markdown block needs a check here"


# -- the agent-output example -----------------------------------------------------------------------------------


def test_the_agent_output_example_lands_through_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/gh-aw.md's agent output, run context and command, exactly as written, in a safe-output job: a bare
    remote standing for the GitHub repository, no checkout."""
    page = ROOT / "docs" / "gh-aw.md"
    [output] = [b for b in of("json", page) if '"items"' in b.text]
    [context] = [b for b in of("json", page) if '"statefile_context"' in b.text]
    [command] = [b for b in of("bash", page) if b.text.startswith("statefile") and " apply " in b.text]
    item = json.loads(output.text)["items"][0]
    assert all(isinstance(value, str) for value in item.values()), "every input is a string"
    remote = tmp_path / "server" / "owner" / "repo.git"
    remote.parent.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    env = {"GITHUB_SERVER_URL": (tmp_path / "server").as_uri(), "GITHUB_REPOSITORY": "owner/repo",
           "GITHUB_RUN_ID": json.loads(context.text)["run_id"], "RUNNER_TEMP": str(tmp_path / "runner-temp"),
           "GH_AW_AGENT_OUTPUT": str(tmp_path / "safeoutputs" / "agent_output.json")}  # fmt: skip
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("GH_AW_SAFE_OUTPUTS_STAGED", "GITHUB_ACTIONS", *(k for k in os.environ if k.startswith("STATEFILE_"))):
        monkeypatch.delenv(key, raising=False)
    written = {Path(env["GH_AW_AGENT_OUTPUT"]): output.text,
               Path(env["RUNNER_TEMP"]) / "statefile-context" / "context.json": context.text}  # fmt: skip
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tmp_path / "job").mkdir()
    monkeypatch.chdir(tmp_path / "job")
    [words] = shell_commands(command)
    args = [os.path.expandvars(word) for word in words[1:]]

    capsys.readouterr()
    assert invoke(cli, args) == 0, capsys.readouterr().err
    assert "recorded iteration 1" in capsys.readouterr().out
    tip = subprocess.run(["git", "rev-parse", "memory/autoloop"], cwd=remote, capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    text = subprocess.run(["git", "show", "memory/autoloop:perf.md"], cwd=remote, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    state = upstream_machine_state(text)
    assert state["iteration_count"] == 1 and state["recent_statuses"] == ["accepted"]
    assert (state["best_metric"], state["target_metric"], state["metric_direction"]) == ("0.93", "0.5", "lower")
    assert state["pr"] == "#12" and state["issue"] == "#7"
    for lesson in item["lessons"].splitlines():
        assert f"- *(agent, iteration 1)* {lesson}" in text
    for key in ("change", "notes", "future_directions", "foreclosed_avenues"):
        assert item[key] in text, key
    # A re-run of the job records nothing twice.
    assert invoke(cli, args) == 0
    again = subprocess.run(["git", "rev-parse", "memory/autoloop"], cwd=remote, capture_output=True, text=True,
                           check=True).stdout  # fmt: skip
    assert again == tip


def test_the_readmes_agent_output_is_the_docs_example_cut_short() -> None:
    [short] = [json.loads(b.text) for b in of("json", README)]
    [full] = [json.loads(b.text) for b in of("json", ROOT / "docs" / "gh-aw.md") if '"items"' in b.text]
    assert short["errors"] == full["errors"] == []
    assert short["items"][0].items() <= full["items"][0].items()
    readme_apply = [b.text for b in of("bash", README) if " apply " in b.text]
    docs_apply = [b.text for b in of("bash", ROOT / "docs" / "gh-aw.md") if b.text.startswith("statefile --remote")]
    assert readme_apply == docs_apply


# -- links ------------------------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def unfenced(text: str) -> str:
    """``text`` without its fenced blocks, where # and brackets are not markdown."""
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def prose(text: str) -> str:
    """``text`` without fenced blocks and inline code."""
    return re.sub(r"`[^`\n]*`", "code", unfenced(text))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation and symbols (emoji) dropped, spaces to
    hyphens (each one)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in _HEADING.finditer(unfenced(path.read_text(encoding="utf-8"))):
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    text = prose(path.read_text(encoding="utf-8"))
    return [m.group(1) for m in _LINK.finditer(text)] + _AUTOLINK.findall(text)


def test_the_slugs_are_githubs() -> None:
    assert github_slug("MCP server: `statefile mcp`") == "mcp-server-statefile-mcp"
    assert github_slug("Path 2: the drop-in path (repo-memory kept)") == "path-2-the-drop-in-path-repo-memory-kept"
    assert github_slug("Where memory is read from, and writes that would fork it") == (
        "where-memory-is-read-from-and-writes-that-would-fork-it"
    )


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_link_resolves(path: Path) -> None:
    for link in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            parts = urlsplit(link)
            assert parts.scheme in ("http", "https") and "." in parts.netloc and " " not in link, link
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.exists(), f"{path.relative_to(ROOT)}: {link} names no file"
        assert ROOT in file.parents or file == ROOT, f"{path.relative_to(ROOT)}: {link} leaves the repository"
        if anchor:
            assert file.suffix == ".md", f"{path.relative_to(ROOT)}: {link}: an anchor into a non-markdown file"
            assert anchor in anchors(file), f"{path.relative_to(ROOT)}: {link}: no such heading"


def test_no_link_points_into_the_readmes_old_sections() -> None:
    """The reference sections moved to docs/: a link to README.md#… anywhere in the repository is a stale one."""
    tracked = subprocess.run(["git", "ls-files", "*.md", "*.py", "*.yml", "*.yaml", "*.toml"], cwd=ROOT,
                             capture_output=True, text=True, check=False)  # fmt: skip
    if tracked.returncode:
        pytest.skip(f"not a git checkout: {tracked.stderr.strip()}")
    files = {*tracked.stdout.split(), *(str(p.relative_to(ROOT)) for p in DOCS)}
    readme_anchors = anchors(README)
    for name in sorted(files):
        if not (ROOT / name).is_file() or name.startswith("tests/mermaid/"):
            continue
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(r"(?<![\w/])README\.md#([\w-]+)", text):
            assert match.group(1) in readme_anchors, f"{name}: README.md#{match.group(1)}"
