"""What a view's "more" lines tell the reader to run next: a maintainer's commands (:data:`CLI`), or a gh-aw agent's
tool calls (:data:`TOOLS`), since the agent's checkout has no memory branch; the tool names are the component's
(tests/e2e/test_ghaw_component.py holds the two together).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: The component's read tools as the agent calls them (gh-aw turns ``-`` into ``_``).
TOOL_SEARCH = "statefile_search"
TOOL_EXPAND = "statefile_expand"
TOOL_HISTORY = "statefile_history"
TOOL_VIEW = "statefile_view"
TOOL_NAMES = (TOOL_SEARCH, TOOL_EXPAND, TOOL_HISTORY, TOOL_VIEW)
HINT_STYLES = ("cli", "tools")


def _call(tool: str, **inputs: object) -> str:
    """``statefile_expand(iteration: 57)``, values in JSON so a query with quotes stays one value."""
    shown = ", ".join(f"{name}: {json.dumps(value, ensure_ascii=False)}" for name, value in inputs.items())
    return f"{tool}({shown})"


@dataclass(frozen=True)
class Hints:
    """Next steps as ``"cli"`` commands (``prefix``: ``statefile`` and the global options that chose the memory) or
    ``"tools"`` calls (the program and the view's budget are the tool's own)."""

    style: str = "cli"
    prefix: str = "statefile"

    @property
    def tools(self) -> bool:
        """Whether hints name tool calls (gh-aw) rather than commands."""
        return self.style == "tools"

    def expand(self, program: str, iteration: int) -> str:
        """Show one iteration verbatim."""
        return _call(TOOL_EXPAND, iteration=iteration) if self.tools else f"{self.prefix} expand {program} {iteration}"

    def view(self, program: str, level: str) -> str:
        """A wider view (``timeline``: one line per entry; ``full``: everything)."""
        return _call(TOOL_VIEW, level=level) if self.tools else f"{self.prefix} render {program} --level {level}"

    def search(self, program: str, query: str = "…") -> str:
        """Search the program's memory, archive and shared lessons included."""
        return _call(TOOL_SEARCH, query=query) if self.tools else f'{self.prefix} search "{query}" --program {program}'

    def more(self, tool: str, command: str, offset: int, **inputs: object) -> str:
        """The same call from ``offset`` on: the tool with its other ``inputs``, or ``command`` (after the prefix)."""
        if self.tools:
            return _call(tool, **inputs, offset=offset)
        return f"{self.prefix} {command} --offset {offset}"


CLI = Hints("cli")
TOOLS = Hints("tools")


def page(text: str, *, max_chars: int, offset: int = 0) -> tuple[str, int | None]:
    """``text`` from ``offset``, at most ``max_chars`` cut at a line end in reach, and the next page's offset
    (``None`` at the end): a tool's answer reaches a model whole, so it is bounded."""
    rest = text[offset:]
    if len(rest) <= max_chars:
        return rest, None
    cut = rest.rfind("\n", 0, max_chars)
    end = cut + 1 if cut >= max_chars // 2 else max_chars
    return rest[:end], offset + end
