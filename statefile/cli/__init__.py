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
from statefile.cli.run import SIZE, invoke, lost_interrupt

# Each module's commands (command NAME is its attribute NAME_cmd); a module is imported only when one of them runs.
_MODULES = {
    "read": "check config expand history list log render report search show status summary",
    "write": "apply compact demo edit export import init lesson prepare record repair sync",
    "mcp_server": "mcp",
}
COMMANDS = {name: f"statefile.cli.{module}:{name}_cmd" for module, names in _MODULES.items() for name in names.split()}
# Global options the group reads from the environment; app.context resolves the others, which are settings.
_GROUP_ENV = ("repo", "folder", "repo_memory", "no_fetch", "as_json", "quiet")


def _global_options(group: bool) -> list[click.Option]:
    """The options every command accepts, before it (the ``group``'s) or after it; each also from the environment."""
    folder = click.Path(path_type=Path, file_okay=False)
    options = [
        click.Option(["--repo"], type=folder, help="Git repository (default: around the current directory)."),
        click.Option(["--branch"], help="Memory branch (default memory/autoloop)."),
        click.Option(["--remote"], help="Remote name or URL to fetch from and push to (GITHUB_TOKEN/GH_TOKEN is sent "
                     "to github.com, never stored)."),
        click.Option(["--dir", "folder"], type=folder, help="Work on a plain folder instead of a branch, e.g. "
                     "/tmp/gh-aw/repo-memory/default."),
        click.Option(["--repo-memory"], is_flag=True, default=None, help="Work on gh-aw's repo-memory folder within "
                     "its frontmatter's limits (--dir overrides the folder)."),
        click.Option(["--max-bytes"], type=SIZE, help="Byte budget per state file, such as 30720 or 30KB (default: "
                     "config, else 30720)."),
        click.Option(["--no-fetch"], is_flag=True, default=None, help="Read the branch as last fetched (the output "
                     "says how old the copy is)."),
        click.Option(["--json", "as_json"], is_flag=True, default=None, help="Machine-readable JSON output."),
        click.Option(["--quiet", "-q"], is_flag=True, default=None, help="Print only errors and data."),
    ]  # fmt: skip
    for option in options:
        env = "STATEFILE_" + option.opts[0].removeprefix("--").replace("-", "_").upper()
        option.help = f"{option.help} [env {env}]"
        if not group:  # after the command: the value goes where the group's would (the environment is read once)
            option.expose_value = False
            option.callback = _set_on_app
        elif option.name in _GROUP_ENV:
            option.envvar = env
    return options


def _set_on_app(ctx: click.Context, param: click.Parameter, value: object) -> None:
    if value is not None and param.name is not None:
        ctx.find_root().ensure_object(dict)[param.name] = value


def _with_global_options(command: click.Command) -> click.Command:
    for sub in command.commands.values() if isinstance(command, click.Group) else ():
        _with_global_options(sub)
    command.params += [o for o in _global_options(group=False) if o.name not in {p.name for p in command.params}]
    return command


@functools.cache
def _load(target: str) -> click.Command:
    module, _, attribute = target.partition(":")
    command = _with_global_options(getattr(importlib.import_module(module), attribute))
    command.short_help = command.get_short_help_str(limit=sys.maxsize)  # `statefile --help`: whole, click cuts it
    return command


class _LazyGroup(click.Group):
    """A group that imports a command's module only when that command is used (or listed by ``--help``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            return _load(COMMANDS[cmd_name])
        if cmd_name.startswith("-"):  # click says what an unknown option is
            return None
        close = difflib.get_close_matches(cmd_name, COMMANDS, n=3)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        raise click.UsageError(f"no command {cmd_name!r}{hint}", ctx)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
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
    ctx.obj = {name: value for name, value in options.items() if value is not None}


cli.params += _global_options(group=True)

if _BEFORE_LOADING is not None:
    signal.signal(signal.SIGINT, _BEFORE_LOADING)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI; statefile errors become one line on stderr and a documented exit code."""
    sys.unraisablehook = lost_interrupt
    sys.exit(invoke(cli, argv))
