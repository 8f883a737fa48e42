"""``statefile mcp``: six read-only tools over stdio (no write side loads); only :func:`build_server` imports the
SDK (0.7 s).  No ``from __future__ import annotations``: the SDK reads the tools' annotations for their schemas."""

import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import click

from statefile import __version__
from statefile.app import reading
from statefile.app.context import AppContext
from statefile.cli.support import command, echo, hints_of, without_checkout
from statefile.errors import EnvironmentFailure, StatefileError
from statefile.model.text import one_line
from statefile.redaction import redact
from statefile.views.history import HistoryRow
from statefile.views.render import DEFAULT_BUDGET, DEFAULT_LEVEL, MAX_BUDGET, MIN_BUDGET
from statefile.views.search import hit_dict

SDK_REQUIREMENT = "mcp>=2.3,<3"

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

INSTRUCTIONS = (
    "Read-only access to this repository's Autoloop memory (statefile). Start a run with `render` for your "
    "program: a budgeted view (machine state, program info, lessons, newest iterations) that names what it left "
    "out. `search` finds lessons and past iterations across every program's file and archive (whole words); "
    "`expand` prints one iteration verbatim, even after compaction archived it; `history` lists every iteration's "
    "status and metric; `status` and `list` show sizes and budgets. Nothing here writes: report your iteration "
    "through the workflow's safe output."
)

READ_ONLY_TOOLS = ("render", "search", "expand", "history", "status", "list")


def build_server(app: AppContext) -> "MCPServer":
    """The MCP server over ``app``'s store, opened afresh by every call: a long-lived server sees new records."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
        from pydantic import BaseModel, Field
    except ModuleNotFoundError as exc:
        # statefile is not on PyPI: name the SDK, and the extra for a checkout.
        raise EnvironmentFailure(
            f"statefile mcp needs the MCP SDK ({exc.name} is not installed); install it into statefile's Python "
            f"with pip install '{SDK_REQUIREMENT}' (statefile's extra 'mcp': pip install '.[mcp]' in a checkout)"
        ) from None

    # The answers' shapes: the SDK makes them each tool's output schema and structured content.
    class ProgramRow(BaseModel):
        program: str
        size: int
        percent_of_budget: float
        iteration_count: int | None
        last_run: str | None
        best_metric: str | None
        status: str
        error: str | None = None

    class ListResult(BaseModel):
        programs: list[ProgramRow]
        max_bytes: int

    class SearchHit(BaseModel):
        program: str
        path: str
        line_no: int
        section: str
        iteration: int | None
        kind: str
        line: str
        score: float
        copies: list[str]
        expand: str | None

    class SearchResult(BaseModel):
        query: str
        hits: list[SearchHit]

    class HistoryResult(BaseModel):  # the newest rows of total, oldest first
        program: str
        direction: str
        total: int
        rows: list[HistoryRow]  # the rows of `statefile history --json`

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)  # fmt: skip
    server: MCPServer = MCPServer(name="statefile", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    def call(read: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:  # errors: the tool's one-line error
        ctx = dataclasses.replace(app, _store=None, _read_checked=False)
        try:
            with ctx.store():
                return read(ctx.reader(), *args, **kwargs)
        except StatefileError as exc:
            raise ToolError(one_line(redact(str(exc)))) from None

    Program = Annotated[str, Field(description="Program name: a state file PROGRAM.md on the memory branch.")]

    def render(
        program: Program,
        budget: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="Characters at most.")] = DEFAULT_BUDGET,
        level: Literal["index", "timeline", "full"] = DEFAULT_LEVEL,
    ) -> str:
        """The view of PROGRAM's memory an agent should read, at most `budget` characters; its last line says
        what was left out and which tool call shows it."""
        hints = hints_of(app, "cli")  # commands with the options this server was started with
        return str(call(reading.render_program, program, budget=budget, level=level, hints=hints).text)

    def search(
        query: Annotated[str, Field(min_length=1, description="Words to find (whole words; `cach*` for prefixes).")],
        program: Annotated[str | None, Field(description="Only this program (and the shared lessons).")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Results at most.")] = 20,
    ) -> SearchResult:
        """Ranked lines from every program's file, its archive and the shared lessons, each naming the file,
        line, section and iteration it comes from (`expand` shows a whole iteration)."""
        hits = call(reading.search_memory, query, program=program, limit=limit)
        return SearchResult(query=query, hits=[SearchHit.model_validate(hit_dict(hit)) for hit in hits])

    def expand(program: Program, iteration: Annotated[int, Field(ge=1, description="The iteration number.")]) -> str:
        """Iteration ITERATION of PROGRAM verbatim, from the state file or, after compaction, from its archive."""
        return str(call(reading.expand_iteration, program, iteration)[1])

    def history(
        program: Program, last: Annotated[int, Field(ge=1, le=10_000, description="Only the newest rows.")] = 50
    ) -> HistoryResult:
        """Every iteration of PROGRAM the file, its range lines and its archive know, oldest first: number,
        date, status, metric, best so far, what changed and where the text lives."""
        found = call(reading.program_history, program)
        return HistoryResult(program=program, direction=found.direction, total=len(found.rows), rows=found.rows[-last:])

    def status(program: Program) -> dict[str, Any]:
        """How full PROGRAM's state file is: bytes and % of budget, estimated tokens per section, counts, and
        whether the next record will compact aggressively."""
        return dict(call(reading.all_status, program, app.config(), app.globs).reports[program])

    def list_tool() -> ListResult:
        """Every program on the memory branch: size, % of budget, iteration count, last run, best metric, status."""
        rows, max_bytes = call(lambda store: (reading.list_programs(store, app.globs), store.max_bytes))
        return ListResult(programs=[ProgramRow.model_validate(row) for row in rows], max_bytes=max_bytes)

    tools: list[Callable[..., Any]] = [render, search, expand, history, status, list_tool]
    for name, tool in zip(READ_ONLY_TOOLS, tools, strict=True):
        text = tool in (render, expand)  # a text answer is the text itself, not a structure holding it
        server.add_tool(tool, name=name, annotations=read_only, structured_output=False if text else None)
    return server


@command("mcp", "statefile --remote origin mcp --check")
@click.option("--check", is_flag=True, help="List the tools and exit: checks the SDK and the memory are there.")
def mcp_cmd(app: AppContext, check: bool) -> None:
    """Serve the memory read-only to an agent over MCP (stdio): tools render, search, expand, history, status, list.

    An MCP client starts it.  Needs the MCP SDK: pip install 'mcp>=2.3,<3' (the extra 'mcp')."""
    with without_checkout(app) as app:
        # A bad --repo/--dir/--remote fails here, before the SDK's imports; a branch not there yet is fine.
        with app.reader(require_branch=False) as store:
            where = str(store).strip("<>").replace("GitStore", "the repository").replace("FolderStore", "the folder")
        server = build_server(app)
        if check:
            import anyio  # the SDK's event loop library

            tools = sorted(tool.name for tool in anyio.run(server.list_tools))
            echo(f"statefile mcp: ready to serve {where} read-only; tools: {', '.join(tools)}")
            return
        if sys.stdin.isatty():
            click.echo("statefile mcp: serving MCP on stdin/stdout (an MCP client starts this; Ctrl-C stops)", err=True)
        server.run()
