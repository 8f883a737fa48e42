"""Commands for a gh-aw run: ``prepare`` (before the agent) and ``apply`` (in the custom safe-output job); see
:mod:`statefile.app.ghaw` and ``workflows/shared/statefile.md``."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from statefile.app import ghaw
from statefile.app.context import AppContext
from statefile.app.writing import change_lines
from statefile.cli.run import echo_error, shown
from statefile.cli.support import emit_json, example, pass_app, say, without_checkout
from statefile.integrations.ghaw import tool_type
from statefile.numbers import budget_text, number_text, plural, size_text
from statefile.views.render import CORE_BUDGET, MIN_BUDGET

_PATH = click.Path(path_type=Path, dir_okay=False)
_FOLDER = click.Path(path_type=Path, file_okay=False)


@click.command("prepare")
@click.option("--autoloop-json", type=_PATH, default="/tmp/gh-aw/autoloop.json", show_default=True,
              help="The scheduler's output: which program this run works on.")  # fmt: skip
@click.option("--out", type=_FOLDER, default=ghaw.PREPARE_DIR, show_default=True,
              help="Folder for memory.md, what the agent reads.")  # fmt: skip
@click.option("--context-out", type=_FOLDER, show_default=f"$RUNNER_TEMP/{ghaw.CONTEXT_ARTIFACT}",
              default=lambda: str(Path(os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()) / ghaw.CONTEXT_ARTIFACT),
              help="Folder for context.json, what the safe-output job trusts: upload it as an artifact before the "
              "agent starts (never inside /tmp/gh-aw/agent/, which the agent writes).")  # fmt: skip
@click.option("--budget", type=click.IntRange(min=MIN_BUDGET), default=CORE_BUDGET, show_default=True,
              help="Characters at most (the rest is one statefile_search/statefile_expand call away).")  # fmt: skip
@example("statefile --dir /tmp/gh-aw/repo-memory/autoloop prepare")
@pass_app
def prepare_cmd(app: AppContext, autoloop_json: Path, out: Path, context_out: Path, budget: int) -> None:
    """Before the agent: write the selected program's memory view and this run's context.

    OUT/memory.md is the core view of the program the scheduler selected (the agent reports through the
    record_iteration tool).  CONTEXT_OUT/context.json carries the program, its direction, target and goal, and the
    run's id and attempt to `statefile apply`; the component uploads it before the agent starts.
    """
    with without_checkout(app) as app:  # the URL the component falls back to works without a checkout
        done = ghaw.prepare(app.store, autoloop_json, out, context_out=context_out, budget=budget, env=app.env,
                            cwd=Path.cwd())  # fmt: skip
    memory, context = done.memory_path, done.context_path
    if app.as_json:
        emit_json({"selected": done.selected, "memory": str(memory), "context": str(context), "chars": done.chars,
                   "new_program": done.new_program})  # fmt: skip
    elif done.selected is None:
        say(app, f"no program selected; wrote {memory} and {context}")
    else:
        what = "a first-iteration note" if done.new_program else f"a {number_text(done.chars)}-character memory view"
        say(app, f"{done.selected}: wrote {what} to {memory}, the run context to {context}")


@click.command("apply")
@click.option("--agent-output", type=_PATH, envvar="GH_AW_AGENT_OUTPUT", required=True,
              help='gh-aw\'s agent output file ({"items": [...]}). [env GH_AW_AGENT_OUTPUT]')  # fmt: skip
@click.option("--type", "item_type", default=ghaw.ITEM_TYPE, show_default=True,
              help="The item type to apply: the custom job's id with '-' as '_'.")  # fmt: skip
@click.option("--context", "context_path", type=_PATH,
              help=f"The run context 'statefile prepare' wrote ({ghaw.CONTEXT_FILE} of the {ghaw.CONTEXT_ARTIFACT} "
              "artifact): which program this run may record, its direction and target.  Required in a gh-aw job; a "
              "context inside the agent's artifact is refused.")  # fmt: skip
@click.option("--any-program", is_flag=True,
              help="A maintainer applying an output by hand, without a run context: items may name any existing "
              "program. No workflow step passes this.")  # fmt: skip
@click.option("--run-id", envvar="GITHUB_RUN_ID", help="The workflow run's id. [env GITHUB_RUN_ID]")
@click.option("--run-url", help="Link written in each entry (default: "
              "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID).")  # fmt: skip
@click.option("--dry-run", is_flag=True,
              help=f"Say what would be recorded; write nothing (also when {ghaw.STAGED_VARIABLE}=true).")  # fmt: skip
@example('statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" apply --agent-output "$GH_AW_AGENT_OUTPUT" '
         '--context "$RUNNER_TEMP/statefile-context/context.json"')  # fmt: skip
@pass_app
def apply_cmd(app: AppContext, agent_output: Path, item_type: str, context_path: Path | None, run_id: str | None,
              run_url: str | None, dry_run: bool, any_program: bool) -> None:  # fmt: skip
    """Record the iteration the agent reported (gh-aw safe outputs) on the memory branch.

    The agent is untrusted: with --context only the selected program, one report per run, texts cleaned and
    capped, numbers bounded.  One commit per item, retried when another run wrote first; a bad item is reported
    and the others still tried; one already on the branch is skipped.  Exit code: 0 when every item landed or
    was there, else the highest among the items that failed.
    """
    with without_checkout(app) as scoped:
        done = ghaw.apply(scoped, agent_output, item_type=item_type, context_path=context_path,
                          any_program=any_program, run_id=run_id, run_url=run_url, dry_run=dry_run)  # fmt: skip
    for error in done.dropped:
        _warn(app, f"gh-aw dropped an item before this job: {error}")
    if not done.items:
        say(app, f"no {tool_type(item_type)} items in {agent_output}; nothing to do")
    elif app.as_json:
        emit_json([o.as_dict() for o in done.items])
    for outcome in () if app.as_json else done.items:
        _report(app, outcome, done.max_bytes)
    if done.exit_code:
        sys.exit(done.exit_code)


def _report(app: AppContext, o: ghaw.ItemOutcome, max_bytes: int) -> None:
    who = f"item {o.index}" + (f" ({o.program})" if o.program else "")
    for warning in o.warnings:
        _warn(app, f"{who}: {warning}")
    if o.action in ("failed", "skipped"):
        if o.action == "skipped":
            say(app, f"{who}: already on the branch ({o.marker}); skipped")
        else:
            echo_error(f"{who}: {o.error}")
            _annotate(app, "error", shown(f"{who}: {o.error}"))
        return
    verb = "would record" if o.action == "would-record" else "recorded"
    size = budget_text(o.size, max_bytes) if o.size is not None else "size unknown"
    line = f"{who}: {verb} iteration {o.iteration} ({o.status}), {size}"
    if o.moved:
        archived = "would archive" if o.action == "would-record" else "archived"  # staged: nothing was written
        line += f"; compaction {archived} {plural(o.moved, 'item')}, {size_text(o.archived_bytes)}"
    if o.commit:
        line += f" [{o.commit[:10]}]"
    if o.attempts > 1:
        line += f" after {number_text(o.attempts)} tries"
    say(app, line)
    # Never silent: an un-pause (with the reason it cleared), a pause, a completion, a new best.
    for change in change_lines(o.changes):
        say(app, f"{who}: {change}")


def _warn(app: AppContext, message: str) -> None:
    message = shown(message)
    click.echo(f"statefile: warning: {message}", err=True)
    _annotate(app, "warning", message)


def _annotate(app: AppContext, level: str, message: str) -> None:
    if app.env.get("GITHUB_ACTIONS") == "true":
        text = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        click.echo(f"::{level} title=statefile apply::{text}")
