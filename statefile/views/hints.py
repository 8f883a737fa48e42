"""What a view's "more" lines tell the reader to run next, in the terms of the place the text is read.

A maintainer reads ``statefile render`` in a clone and can run ``statefile expand perf 57``.  A gh-aw agent reads
``memory.md`` in a checkout of ``main`` without the memory branch, where that command fails (exit 3): it can only
call the read tools the component declares (``mcp-scripts:`` in workflows/shared/statefile.md, served by gh-aw on
the runner, where the scheduler's clone of the branch is).  So every hint goes through one :class:`Hints`: the
CLI's own commands (:data:`CLI`) or the agent's tool calls (:data:`TOOLS`).  The tool names are the component's
(``statefile-expand`` there; gh-aw turns ``-`` into ``_``); tests/e2e/test_ghaw_component.py holds the two together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: The component's read tools, as the agent calls them (gh-aw's names: the frontmatter key with ``-`` → ``_``).
TOOL_SEARCH = "statefile_search"
TOOL_EXPAND = "statefile_expand"
TOOL_HISTORY = "statefile_history"
TOOL_VIEW = "statefile_view"
TOOL_NAMES = (TOOL_SEARCH, TOOL_EXPAND, TOOL_HISTORY, TOOL_VIEW)
HINT_STYLES = ("cli", "tools")


def _call(tool: str, **inputs: object) -> str:
    """``statefile_expand(iteration: 57)``: a tool call as the component's tool descriptions show it (JSON values,
    so a query with quotes stays one value)."""
    shown = ", ".join(f"{name}: {json.dumps(value, ensure_ascii=False)}" for name, value in inputs.items())
    return f"{tool}({shown})"


@dataclass(frozen=True)
class Hints:
    """Next steps, in one style: ``"cli"`` (commands) or ``"tools"`` (the agent's tool calls).

    In the tools' style the program is implied (each tool reads the program the scheduler selected) and the view
    tool's budget is its own, so neither appears.
    """

    style: str = "cli"
    #: How a command starts: ``statefile`` and the global options that chose the memory read (``--repo-memory``,
    #: ``--dir X``, ``--remote Y``), so a hint runs where it is read.
    prefix: str = "statefile"

    @property
    def tools(self) -> bool:
        """Whether hints name tool calls (gh-aw) rather than commands."""
        return self.style == "tools"

    def expand(self, program: str, iteration: int) -> str:
        """Show one iteration verbatim."""
        return _call(TOOL_EXPAND, iteration=iteration) if self.tools else f"{self.prefix} expand {program} {iteration}"

    def view(self, program: str, level: str, budget: int | None = None) -> str:
        """A wider view (``timeline``: one line per entry; ``full``: everything)."""
        if self.tools:
            return _call(TOOL_VIEW, level=level)
        return f"{self.prefix} render {program} --level {level}" + (f" --budget {budget}" if budget else "")

    def search(self, program: str, query: str = "…") -> str:
        """Search the program's memory, archive and shared lessons included."""
        return _call(TOOL_SEARCH, query=query) if self.tools else f'{self.prefix} search "{query}" --program {program}'

    def history(self, program: str) -> str:
        """Every iteration as one row."""
        return _call(TOOL_HISTORY) if self.tools else f"{self.prefix} history {program}"

    def more(self, tool: str, command: str, offset: int, **inputs: object) -> str:
        """The same call from ``offset`` on: the tool with its other ``inputs``, or ``command`` (the command and its
        arguments, after the prefix, without ``--offset``); see :func:`page`."""
        if self.tools:
            return _call(tool, **inputs, offset=offset)
        return f"{self.prefix} {command} --offset {offset}"


CLI = Hints("cli")
TOOLS = Hints("tools")


def hints_for(style: str) -> Hints:
    """The :class:`Hints` of ``style`` (``"cli"`` or ``"tools"``)."""
    if style not in HINT_STYLES:
        raise ValueError(f"unknown hint style {style!r}")
    return TOOLS if style == "tools" else CLI


def page(text: str, *, max_chars: int, offset: int = 0) -> tuple[str, int | None]:
    """``text`` from character ``offset``, at most ``max_chars`` of it, cut at a line end when one is in reach;
    with the offset the next page starts at, or ``None`` when this page reaches the end.

    Tool output reaches a model whole, so a tool's answer is bounded; what does not fit is one more call away
    (the caller prints :meth:`Hints.page` after the page).
    """
    rest = text[offset:]
    if len(rest) <= max_chars:
        return rest, None
    cut = rest.rfind("\n", 0, max_chars)
    end = cut + 1 if cut >= max_chars // 2 else max_chars
    return rest[:end], offset + end
