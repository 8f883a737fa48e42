"""``statefile mcp``: the real console script as a stdio MCP server, driven by the MCP SDK's own client.

One server process serves the whole module (spawning one costs about a second: the SDK's import), against a real
repository whose memory branch lives on a bare remote.  The SDK is in the test extras, so these tests run in CI.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from conftest import SAMPLES, pinned_identity
from gitutil import STATEFILE, Repos, make_repos, run_statefile

from statefile.cli.mcp_server import SDK_REQUIREMENT
from statefile.store import Store

if TYPE_CHECKING:  # the SDK takes most of a second to import: each worker pays it only when these tests run
    from mcp import ClientSession
    from mcp.types import CallToolResult

PACKAGE = Path(__file__).resolve().parents[2] / "statefile"
TOOLS = {"render", "search", "expand", "history", "status", "list"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    """mid-life compacted by the real command (a real archive) and one record more; messy as agents leave files."""
    with pinned_identity(tmp_path_factory):
        repos = make_repos(tmp_path_factory.mktemp("mcp"))
        with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
            store.write_files({"mid.md": (SAMPLES / "mid-life.md").read_text(),
                               "messy.md": (SAMPLES / "messy.md").read_text()}, "seed")  # fmt: skip
        env = {"STATEFILE_KEEP_RECENT": "3"}
        assert run_statefile("--remote", "origin", "compact", "mid", cwd=repos.work, env=env).returncode == 0
        proc = run_statefile("--remote", "origin", "record", "mid", "--status", "accepted", "--metric", "130",
                             "--change", "Port module m3 to Go", cwd=repos.work, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    return repos


@pytest.fixture(scope="module")
async def session(memory: Repos, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ClientSession]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    errlog = tmp_path_factory.mktemp("mcp-log") / "server-stderr.log"
    params = StdioServerParameters(command=STATEFILE, args=["--remote", "origin", "mcp"], cwd=str(memory.work))
    # stdio_client hands errlog to the child as its stderr, so it must be a real file.
    with errlog.open("w") as err, anyio.fail_after(60):
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            assert init.server_info.name == "statefile" and init.instructions is not None
            assert "Read-only" in init.instructions
            yield client


def text_of(result: CallToolResult) -> str:
    from mcp.types import TextContent

    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    with anyio.fail_after(30):
        return await session.call_tool(tool, arguments)


@pytest.mark.anyio
async def test_six_read_only_tools_with_schemas(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.destructive_hint is False and tool.description
    assert tools["render"].input_schema["required"] == ["program"]
    assert tools["render"].input_schema["properties"]["budget"]["minimum"] == 200
    assert tools["render"].input_schema["properties"]["level"]["enum"] == ["index", "timeline", "full"]
    # Typed answers: each structured tool's output schema names its fields, down to a row's (an untyped dict
    # would give clients nothing to check the structured content against).
    schemas = {name: json.dumps(tools[name].output_schema) for name in ("search", "history", "list")}
    expected = {"search": ("hits", "line_no", "score"), "history": ("rows", "total", "direction")}
    for name, fields in (expected | {"list": ("programs", "percent_of_budget", "max_bytes")}).items():
        assert all(f'"{field}"' in schemas[name] for field in fields), (name, schemas[name])


@pytest.mark.anyio
async def test_render_is_the_budgeted_view(session: ClientSession, memory: Repos) -> None:
    result = await call(session, "render", {"program": "mid", "budget": 1500})
    assert not result.is_error
    text = text_of(result)
    assert len(text) <= 1500 and text.startswith("# Autoloop: mid — memory view")
    cli = run_statefile("--remote", "origin", "render", "mid", "--budget", "1500", cwd=memory.work)
    assert text == cli.stdout  # the same use case as the command


@pytest.mark.anyio
async def test_search_names_where_each_hit_lives(session: ClientSession) -> None:
    result = await call(session, "search", {"query": "Port module m3 to Go", "limit": 5})
    assert not result.is_error and result.structured_content is not None
    hits = result.structured_content["hits"]
    assert hits[0]["iteration"] == 41 and hits[0]["path"] == "mid.md" and hits[0]["kind"] == "iteration"
    assert hits[0]["expand"] == "statefile expand mid 41" and hits[0]["line_no"] > 0
    assert json.loads(text_of(result)) == result.structured_content  # the text mirrors the structure
    archived = await call(session, "search", {"query": "Batch the merge join loop", "program": "mid"})
    assert archived.structured_content is not None
    assert any(h["path"] == "archive/mid/0001.md" for h in archived.structured_content["hits"])


@pytest.mark.anyio
async def test_expand_reads_the_archive(session: ClientSession) -> None:
    result = await call(session, "expand", {"program": "mid", "iteration": 2})
    assert not result.is_error and text_of(result).startswith("### Iteration 2 — ")
    missing = await call(session, "expand", {"program": "mid", "iteration": 999})
    assert missing.is_error and "iteration 999 of 'mid' is not in the file or its archive" in text_of(missing)


@pytest.mark.anyio
async def test_history_status_and_list(session: ClientSession) -> None:
    history = await call(session, "history", {"program": "mid", "last": 5})
    assert not history.is_error and history.structured_content is not None
    data = history.structured_content
    assert data["total"] == 41 and [r["first"] for r in data["rows"]] == [37, 38, 39, 40, 41]
    assert data["rows"][-1]["change"] == "Port module m3 to Go" and data["rows"][-1]["best"] == 130
    status = await call(session, "status", {"program": "mid"})
    assert status.structured_content is not None and status.structured_content["max_bytes"] == 30720
    assert status.structured_content["counts"]["archived_entries"] >= 37
    listed = await call(session, "list", {})
    assert listed.structured_content is not None
    assert [p["program"] for p in listed.structured_content["programs"]] == ["messy", "mid"]


@pytest.mark.anyio
async def test_errors_are_one_line_results_not_crashes(session: ClientSession) -> None:
    unknown = await call(session, "render", {"program": "nope"})
    assert unknown.is_error and text_of(unknown) == (
        "Error executing tool render: no program 'nope'; 'statefile list' shows the programs"
    )
    bad = await call(session, "render", {"program": "mid", "budget": 10})
    assert bad.is_error  # argument validation, before any statefile code runs
    empty = await call(session, "search", {"query": "   "})
    assert empty.is_error and "empty search query" in text_of(empty)
    # The server is still serving after errors.
    assert not (await call(session, "list", {})).is_error


@pytest.mark.anyio
async def test_the_server_sees_new_records_without_a_restart(session: ClientSession, memory: Repos) -> None:
    before = await call(session, "history", {"program": "mid", "last": 1})
    assert before.structured_content is not None and before.structured_content["total"] == 41
    proc = run_statefile("--remote", "origin", "record", "mid", "--status", "rejected", "--metric", "1",
                         cwd=memory.work)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    after = await call(session, "history", {"program": "mid", "last": 1})
    assert after.structured_content is not None and after.structured_content["total"] == 42


# What writes, or exists only to write: the write use cases, the record rules, compaction and its planner and
# summarizer, repair and edits, lesson promotion, export/import, and the write commands.  None of it may load in the
# server, so no code path of a tool can reach it.  (The public API, statefile/__init__.py, imports the record rules
# and compaction in every process, the server's too; that the server never calls them is the AST check below.)
WRITE_SIDE = (
    "statefile.app.writing",
    "statefile.app.ghaw",
    "statefile.policy.repair",
    "statefile.policy.lessons",
    "statefile.integrations.summarizer",
    "statefile.store.exchange",
    "statefile.cli.write",
)
_BUILD_AND_CALL = """
import json, sys
import anyio
from statefile.app.context import AppContext
from statefile.cli.mcp_server import READ_ONLY_TOOLS, build_server
server = build_server(AppContext(folder=__import__("pathlib").Path(sys.argv[1])))
calls = {"render": {"program": "mid"}, "search": {"query": "parser"}, "expand": {"program": "mid", "iteration": 1},
         "history": {"program": "mid"}, "status": {"program": "mid"}, "list": {}}
assert set(calls) == set(READ_ONLY_TOOLS)
for name, arguments in calls.items():
    result = anyio.run(server.call_tool, name, arguments)
    assert not result.is_error, (name, result)  # each tool really ran its read
print(json.dumps(sorted(name for name in sys.modules if name.startswith("statefile."))))
"""


def test_the_server_never_writes(tmp_path: Path) -> None:
    """Read-only by design: building the server and calling every tool loads no module of the write side."""
    (tmp_path / "mid.md").write_text((SAMPLES / "mid-life.md").read_text())
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD_AND_CALL, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "statefile.cli.mcp_server" in loaded and "statefile.app.reading" in loaded  # the probe saw the server
    assert loaded.isdisjoint(WRITE_SIDE), sorted(loaded & set(WRITE_SIDE))
    tree = ast.parse((PACKAGE / "cli" / "mcp_server.py").read_text())
    called = {
        node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    called |= {
        node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"update", "write_files", "push", "fetch_and_update", "compact", "record"}


def test_without_the_sdk_the_command_says_how_to_get_it(tmp_path: Path) -> None:
    """A plain install has no MCP SDK: one line naming an install that works today (the hint named
    `pip install 'statefile[mcp]'`, and statefile is not on PyPI), the environment exit code, no traceback."""
    code = (
        "import sys; sys.modules['mcp'] = None\n"  # what Python does for a module that is not installed
        "from statefile.cli import main\n"
        "main(['--dir', sys.argv[1], 'mcp'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 8, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "statefile: error: statefile mcp needs the MCP SDK (mcp.server is not installed); install it into "
        "statefile's Python with pip install 'mcp>=2.3,<3' (statefile's extra 'mcp': pip install '.[mcp]' in a "
        "checkout)"
    ]
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the package's own dependency below 3.11
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

    extra = tomllib.loads(pyproject)["project"]["optional-dependencies"]["mcp"]
    assert extra[0] == SDK_REQUIREMENT  # the hint names what the extra installs
    # Every package mcp_server.py imports directly is declared in the extra (not borrowed from the SDK's own).
    source = (PACKAGE / "cli" / "mcp_server.py").read_text(encoding="utf-8")
    for module in ("anyio", "pydantic"):
        assert re.search(rf"^\s*(?:import|from) {module}\b", source, re.M) and any(
            r.startswith(module) for r in extra
        ), module


def test_a_bad_folder_fails_before_serving(tmp_path: Path) -> None:
    proc = run_statefile("--dir", str(tmp_path / "nope"), "mcp", cwd=tmp_path, stdin="")
    assert proc.returncode == 3 and "no such folder" in proc.stderr and proc.stdout == ""


def test_check_lists_the_tools_without_serving(memory: Repos) -> None:
    proc = run_statefile("--remote", "origin", "mcp", "--check", cwd=memory.work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("statefile mcp: ready to serve the repository ")
    assert proc.stdout.rstrip().endswith("read-only; tools: expand, history, list, render, search, status")
