"""``statefile mcp``: the memory's read side as an MCP server over stdio, for agents that call tools by name.

Six read-only tools, each the read use case of the command of that name (:mod:`statefile.app.reading`); nothing on
the write side loads (a test checks).  Each call opens the store afresh, so a long-lived server answers from the
branch as it is now.  The SDK (the optional extra ``mcp``) takes 0.7 s to import: only :func:`build_server` does.
No ``from __future__ import annotations``: the SDK reads the tools' annotations to build their input schemas.
"""

import dataclasses
import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

import click

from statefile import __version__
from statefile.app.context import AppContext
from statefile.app.reading import (
    StatusReport,
    all_status,
    expand_iteration,
    list_programs,
    program_history,
    render_program,
    search_memory,
)
from statefile.cli.support import echo, example, hints_of, pass_app, without_checkout
from statefile.errors import EnvironmentFailure, StatefileError
from statefile.model.text import one_line
from statefile.redaction import redact
from statefile.views.history import HistoryRow
from statefile.views.render import DEFAULT_BUDGET, DEFAULT_LEVEL, MAX_BUDGET, MIN_BUDGET
from statefile.views.search import hit_dict

#: What the ``mcp`` extra in pyproject.toml requires (a test keeps them equal).
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
    """The MCP server over ``app``'s store (every call opens it afresh); EnvironmentFailure without the SDK."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
        from pydantic import BaseModel, Field
    except ModuleNotFoundError as exc:
        # statefile is not on PyPI, so 'statefile[mcp]' cannot be installed: name the SDK, and the extra for a checkout.
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

    def call(work: Any) -> Any:
        """Run ``work(store)`` on a fresh store; statefile's own errors become the tool's one-line error."""
        ctx = dataclasses.replace(app, _store=None, _read_checked=False)
        try:
            with ctx.store():
                return work(ctx.reader())
        except StatefileError as exc:
            raise ToolError(one_line(redact(str(exc)))) from None

    def pick(model: type[BaseModel], data: dict[str, Any]) -> Any:
        return model(**{key: value for key, value in data.items() if key in model.model_fields})

    Program = Annotated[str, Field(description="Program name: a state file PROGRAM.md on the memory branch.")]

    @server.tool(annotations=read_only, structured_output=False)
    def render(
        program: Program,
        budget: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="Characters at most.")] = DEFAULT_BUDGET,
        level: Literal["index", "timeline", "full"] = DEFAULT_LEVEL,
    ) -> str:
        """The view of PROGRAM's memory an agent should read, at most `budget` characters; its last line says
        what was left out and which tool call shows it."""
        hints = hints_of(app, "cli")  # commands with the options this server was started with
        return str(call(lambda store: render_program(store, program, budget=budget, level=level, hints=hints).text))

    @server.tool(annotations=read_only)
    def search(
        query: Annotated[str, Field(min_length=1, description="Words to find (whole words; `cach*` for prefixes).")],
        program: Annotated[str | None, Field(description="Only this program (and the shared lessons).")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Results at most.")] = 20,
    ) -> SearchResult:
        """Ranked lines from every program's file, its archive and the shared lessons, each naming the file,
        line, section and iteration it comes from (`expand` shows a whole iteration)."""
        hits = call(lambda store: search_memory(store, query, program=program, limit=limit))
        return SearchResult(query=query, hits=[pick(SearchHit, hit_dict(hit)) for hit in hits])

    @server.tool(annotations=read_only, structured_output=False)
    def expand(program: Program, iteration: Annotated[int, Field(ge=1, description="The iteration number.")]) -> str:
        """Iteration ITERATION of PROGRAM verbatim, from the state file or, after compaction, from its archive."""
        return str(call(lambda store: expand_iteration(store, program, iteration)[1]))

    @server.tool(annotations=read_only)
    def history(
        program: Program, last: Annotated[int, Field(ge=1, le=10_000, description="Only the newest rows.")] = 50
    ) -> HistoryResult:
        """Every iteration of PROGRAM the file, its range lines and its archive know, oldest first: number,
        date, status, metric, best so far, what changed and where the text lives."""
        found = call(lambda store: program_history(store, program))
        rows = list(found.rows[-last:])
        return HistoryResult(program=program, direction=found.direction, total=len(found.rows), rows=rows)

    @server.tool(annotations=read_only)
    def status(program: Program) -> dict[str, Any]:
        """How full PROGRAM's state file is: bytes and % of budget, estimated tokens per section, counts, and
        whether the next record will compact aggressively."""
        found: StatusReport = call(lambda store: all_status(store, program, app.config(), app.globs))
        return found.reports[program]

    @server.tool(name="list", annotations=read_only)
    def list_tool() -> ListResult:
        """Every program on the memory branch: size, % of budget, iteration count, last run, best metric, status."""
        rows, max_bytes = call(lambda store: (list_programs(store, app.globs), store.max_bytes))
        return ListResult(programs=[pick(ProgramRow, row) for row in rows], max_bytes=max_bytes)

    return server


@click.command("mcp")
@click.option("--check", is_flag=True, help="Start the server, list its tools and exit instead of serving: checks "
              "the SDK and the memory are there.")  # fmt: skip
@example("statefile --remote origin mcp --check")
@pass_app
def mcp_cmd(app: AppContext, check: bool) -> None:
    """Serve the memory read-only to an agent over MCP (stdio): tools render, search, expand, history, status, list.

    An MCP client starts `statefile mcp` and talks JSON-RPC on its stdin and stdout.  Needs the optional MCP SDK:
    pip install 'mcp>=2.3,<3' (the extra 'mcp').  Every tool is read-only; writes go through `statefile record`
    (or the gh-aw safe-output job).  Global options (--remote, --dir, --branch) choose the memory it serves.
    """

    with without_checkout(app) as app:
        # A bad --repo/--dir/--remote fails here, before the SDK's imports; a branch not there yet is fine.
        store = app.reader(require_branch=False)
        where = str(store).strip("<>").replace("GitStore ", "the repository ").replace("FolderStore ", "the folder ")
        store.close()
        server = build_server(app)
        if check:
            import anyio  # the SDK's event loop library

            tools = sorted(tool.name for tool in anyio.run(server.list_tools))
            echo(f"statefile mcp: ready to serve {where} read-only; tools: {', '.join(tools)}")
            return
        if sys.stdin.isatty():
            click.echo("statefile mcp: serving MCP on stdin/stdout (an MCP client starts this; Ctrl-C stops)", err=True)
        server.run()
