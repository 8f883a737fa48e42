"""The ``statefile`` command: global options (before the command or after it), the command table (a command's
module is imported only when it runs: ``statefile --version`` does not pay for compaction), and the entry point."""

from __future__ import annotations

import signal

# The package's own handler: it already covers statefile's imports, and here covers the command line's.
from statefile import _interrupted_while_loading

try:
    # Only for the imports below: the previous handler comes back at the module's end, so a program that imports
    # the CLI keeps its own Ctrl-C, and a running command gets the KeyboardInterrupt it reports.
    _BEFORE_LOADING = signal.signal(signal.SIGINT, _interrupted_while_loading)
except ValueError:  # not the main thread, which alone may set handlers (and alone receives the signal)
    _BEFORE_LOADING = None

import difflib
import functools
import importlib
import sys
from pathlib import Path
from typing import Any

import click

from statefile import __version__
from statefile.cli.run import invoke
from statefile.cli.types import SIZE

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}

# Command name → "module:attribute".  Adding a command: write it in a module under statefile/cli/ and name it here.
COMMANDS: dict[str, str] = {
    "apply": "statefile.cli.ghaw:apply_cmd",
    "check": "statefile.cli.read:check_cmd",
    "compact": "statefile.cli.write:compact_cmd",
    "config": "statefile.cli.read:config_cmd",
    "demo": "statefile.cli.demo:demo_cmd",
    "edit": "statefile.cli.write:edit_cmd",
    "expand": "statefile.cli.read:expand_cmd",
    "export": "statefile.cli.backup:export_cmd",
    "history": "statefile.cli.insight:history_cmd",
    "import": "statefile.cli.backup:import_cmd",
    "init": "statefile.cli.write:init_cmd",
    "lesson": "statefile.cli.write:lesson_group",
    "list": "statefile.cli.read:list_cmd",
    "log": "statefile.cli.read:log_cmd",
    "mcp": "statefile.cli.mcp_server:mcp_cmd",
    "prepare": "statefile.cli.ghaw:prepare_cmd",
    "record": "statefile.cli.write:record_cmd",
    "render": "statefile.cli.memory:render_cmd",
    "repair": "statefile.cli.write:repair_cmd",
    "report": "statefile.cli.read:report_cmd",
    "search": "statefile.cli.memory:search_cmd",
    "show": "statefile.cli.read:show_cmd",
    "status": "statefile.cli.memory:status_cmd",
    "summary": "statefile.cli.insight:summary_cmd",
    "sync": "statefile.cli.write:sync_cmd",
}
# Global options the group reads from the environment; the others are settings, which app.config resolves.
_GROUP_ENV = ("repo", "folder", "repo_memory", "no_fetch", "as_json", "quiet")


def _global_options() -> list[click.Option]:
    """The options every command accepts, before it or after it."""
    folder = click.Path(path_type=Path, file_okay=False)
    return [
        click.Option(["--repo"], type=folder, help="Git repository holding the memory branch (default: the one "
                     "around the current directory). [env STATEFILE_REPO]"),
        click.Option(["--branch"], help="Memory branch (default memory/autoloop). [env STATEFILE_BRANCH]"),
        click.Option(["--remote"], help="Fetch from and push to this remote: a name (origin) or a URL; GITHUB_TOKEN/"
                     "GH_TOKEN is sent to github.com as a header, never stored. [env STATEFILE_REMOTE]"),
        click.Option(["--dir", "folder"], type=folder, help="Work on a plain folder instead of a branch, e.g. "
                     "/tmp/gh-aw/repo-memory/default. [env STATEFILE_DIR]"),
        click.Option(["--repo-memory"], is_flag=True, default=None, help="Work on gh-aw's repo-memory folder "
                     "(/tmp/gh-aw/repo-memory/{id} from the workflow frontmatter; --dir overrides) within its "
                     "file-glob, max-file-size and max-patch-size. [env STATEFILE_REPO_MEMORY]"),
        click.Option(["--max-bytes"], type=SIZE, help="Byte budget per state file, such as 30720 or 30KB (default: "
                     "config, else 30720). [env STATEFILE_MAX_BYTES]"),
        click.Option(["--no-fetch"], is_flag=True, default=None, help="Read the memory branch as last fetched: no "
                     "fetch before a read in a clone whose remote holds it (the output says how old the copy is). "
                     "[env STATEFILE_NO_FETCH]"),
        click.Option(["--json", "as_json"], is_flag=True, default=None, help="Machine-readable JSON output."),
        click.Option(["--quiet", "-q"], is_flag=True, default=None, help="Print only errors and data."),
    ]  # fmt: skip


def _set_on_app(ctx: click.Context, param: click.Parameter, value: object) -> None:
    """Record a global option given after the command (given: not None) with the group's options."""
    if value is not None and param.name is not None:
        root = ctx.find_root()
        root.obj = {**(root.obj or {}), param.name: value}


def _with_global_options(command: click.Command) -> click.Command:
    """Let ``command`` (and a group's subcommands) accept the global options after its own arguments."""
    for sub in command.commands.values() if isinstance(command, click.Group) else ():
        _with_global_options(sub)
    own = {param.name for param in command.params}
    for option in _global_options():
        if option.name not in own:
            option.expose_value = False
            option.callback = _set_on_app
            command.params.append(option)
    return command


@functools.cache
def _load(target: str) -> click.Command:
    """The command ``module:attribute`` names, imported now, with the global options."""
    module, _, attribute = target.partition(":")
    return _with_global_options(getattr(importlib.import_module(module), attribute))


class _LazyGroup(click.Group):
    """A group that imports a command's module only when that command is used (or listed by ``--help``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return _load(COMMANDS[cmd_name]) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """``statefile --help``'s command list: each first sentence whole, wrapped (click cuts it with "...")."""
        commands = [(name, _load(target)) for name, target in sorted(COMMANDS.items())]
        rows = [(name, cmd.get_short_help_str(limit=sys.maxsize)) for name, cmd in commands if not cmd.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            close = difflib.get_close_matches(name, COMMANDS, n=3)
            hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
            raise click.UsageError(f"no command {name!r}{hint}", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=_LazyGroup, context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="statefile")
@click.pass_context
def cli(ctx: click.Context, /, **options: Any) -> None:
    """Keep Autoloop state files — the agent's memory on the memory/autoloop branch — correct and under budget.

    \b
    Moments:
      pre-step      statefile --dir /tmp/gh-aw/repo-memory/autoloop report --out /tmp/gh-aw/autoloop.json
      pre-agent     statefile --dir /tmp/gh-aw/repo-memory/autoloop prepare
      safe output   statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" apply
      maintainer    statefile list · statefile log perf · statefile expand perf 57
    Global options also work after the command: statefile status perf --json
    Shell completion: eval "$(_STATEFILE_COMPLETE=bash_source statefile)"
    """
    # The options as given; statefile.cli.support.pass_app builds the AppContext from them when a command runs.
    ctx.obj = {name: value for name, value in options.items() if value is not None}


for _option in _global_options():
    if _option.name in _GROUP_ENV:
        _option.envvar = "STATEFILE_" + _option.opts[0].removeprefix("--").replace("-", "_").upper()
    cli.params.append(_option)

if _BEFORE_LOADING is not None:
    signal.signal(signal.SIGINT, _BEFORE_LOADING)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI; statefile errors become one line on stderr and a documented exit code."""
    sys.exit(invoke(cli, argv))
