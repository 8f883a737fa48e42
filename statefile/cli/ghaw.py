"""Commands for a gh-aw run: ``prepare`` (before the agent) and ``apply`` (in the custom safe-output job).

See :mod:`statefile.app.ghaw` for what they do and ``workflows/shared/statefile.md`` for the component that runs
them.
"""

from __future__ import annotations

import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import click

from statefile.app.context import AppContext
from statefile.app.ghaw import (
    CONTEXT_ARTIFACT,
    CONTEXT_FILE,
    ITEM_TYPE,
    PREPARE_DIR,
    ItemOutcome,
    apply_items,
    compactor_for,
    prepare,
    read_context,
)
from statefile.app.writing import change_lines, compaction_policy
from statefile.cli.run import echo_error, shown
from statefile.cli.support import emit_json, example, pass_app, say, without_checkout
from statefile.errors import UsageError
from statefile.integrations.ghaw import read_agent_output, tool_type
from statefile.numbers import budget_text, number_text, plural, size_text
from statefile.views.render import CORE_BUDGET

STAGED_VARIABLE = "GH_AW_SAFE_OUTPUTS_STAGED"


@click.command("prepare")
@click.option(
    "--autoloop-json",
    type=click.Path(path_type=Path, dir_okay=False),
    default="/tmp/gh-aw/autoloop.json",
    show_default=True,
    help="The scheduler's output: which program this run works on.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=PREPARE_DIR,
    show_default=True,
    help="Folder for memory.md, what the agent reads.",
)
@click.option(
    "--context-out",
    type=click.Path(path_type=Path, file_okay=False),
    default=lambda: str(Path(os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()) / CONTEXT_ARTIFACT),
    show_default=f"$RUNNER_TEMP/{CONTEXT_ARTIFACT}",
    help="Folder for context.json, what the safe-output job trusts: upload it as an artifact before the agent "
    "starts (never inside /tmp/gh-aw/agent/, which the agent writes).",
)
@click.option("--budget", type=click.IntRange(min=200), default=CORE_BUDGET, show_default=True,
              help="Characters at most (the rest is one statefile_search/statefile_expand call away).")  # fmt: skip
@example("statefile --dir /tmp/gh-aw/repo-memory/autoloop prepare")
@pass_app
def prepare_cmd(app: AppContext, autoloop_json: Path, out: Path, context_out: Path, budget: int) -> None:
    """Before the agent: write the selected program's memory view and this run's context.

    OUT/memory.md is the core view of the program the scheduler selected (read-only: the agent reports through
    the record_iteration tool, and reads the rest through the component's statefile_* tools).
    CONTEXT_OUT/context.json carries the selected program, its definition's metric direction, target and goal,
    and the run's id and attempt to `statefile apply`.  The agent must not be
    able to rewrite it: the component uploads it as the statefile-context artifact before the agent starts.
    """

    with without_checkout(app) as app:  # the URL the component falls back to works without a checkout
        outcome = prepare(
            app.store, autoloop_json, out, context_out=context_out, budget=budget, env=app.env, cwd=Path.cwd()
        )
    if app.as_json:
        emit_json(
            {
                "selected": outcome.selected,
                "memory": str(outcome.memory_path),
                "context": str(outcome.context_path),
                "chars": outcome.chars,
                "new_program": outcome.new_program,
            }
        )
        return
    if outcome.selected is None:
        say(app, f"no program selected; wrote {outcome.memory_path} and {outcome.context_path}")
    else:
        what = (
            "a first-iteration note" if outcome.new_program else f"a {number_text(outcome.chars)}-character memory view"
        )
        say(
            app, f"{outcome.selected}: wrote {what} to {outcome.memory_path}, the run context to {outcome.context_path}"
        )


@click.command("apply")
@click.option(
    "--agent-output",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="GH_AW_AGENT_OUTPUT",
    required=True,
    help='gh-aw\'s agent output file ({"items": [...]}). [env GH_AW_AGENT_OUTPUT]',
)
@click.option(
    "--type",
    "item_type",
    default=ITEM_TYPE,
    show_default=True,
    help="The item type to apply: the custom job's id with '-' as '_'.",
)
@click.option(
    "--context",
    "context_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help=f"The run context 'statefile prepare' wrote ({CONTEXT_FILE} of the {CONTEXT_ARTIFACT} artifact): which "
    "program this run may record, its direction and target.  Required in a gh-aw job; a context inside the "
    "agent's artifact is refused.",
)
@click.option(
    "--any-program",
    is_flag=True,
    help="A maintainer applying an output by hand, without a run context: items may name any existing program. "
    "No workflow step passes this.",
)
@click.option("--run-id", envvar="GITHUB_RUN_ID", help="The workflow run's id. [env GITHUB_RUN_ID]")
@click.option(
    "--run-url",
    help="Link written in each entry (default: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID).",
)
@click.option(
    "--dry-run", is_flag=True, help=f"Say what would be recorded; write nothing (also when {STAGED_VARIABLE}=true)."
)
@example(
    'statefile --remote "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git" apply --agent-output "$GH_AW_AGENT_OUTPUT" '
    '--context "$RUNNER_TEMP/statefile-context/context.json"'
)
@pass_app
def apply_cmd(
    app: AppContext,
    agent_output: Path,
    item_type: str,
    context_path: Path | None,
    run_id: str | None,
    run_url: str | None,
    dry_run: bool,
    any_program: bool,
) -> None:
    """Record the iteration the agent reported (gh-aw safe outputs) on the memory branch.

    The agent is untrusted: with --context only the program the scheduler selected is written, one report per
    run, its texts cleaned and capped, its numbers bounded.  One compare-and-swap commit per item through the
    remote, retried when another run wrote first.  A bad item is reported on its own line and the others are
    still tried.  An item whose entry is already on the branch (the job was re-run) is skipped.  Without a
    checkout (a safe-output job has none) a URL remote is used from a temporary repository.  Exit code: 0 when
    every item landed or was already there, else the highest exit code among the items that failed.
    """

    output = read_agent_output(agent_output)
    if context_path is not None and any_program:
        raise UsageError("--context and --any-program exclude each other: a run context names the one program")
    context = read_context(context_path, agent_output) if context_path is not None else None
    env = app.env
    if run_url is None and run_id and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        run_url = f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{run_id}"
    dry_run = dry_run or env.get(STAGED_VARIABLE, "").strip().lower() == "true"
    items = output.of_type(item_type)
    for error in output.errors:
        if tool_type(item_type) in error:
            _warn(app, f"gh-aw dropped an item before this job: {error}")
    if not items:
        say(app, f"no {tool_type(item_type)} items in {agent_output}; nothing to do")
        return
    with without_checkout(app) as app:
        now = datetime.now(timezone.utc)
        store = app.store()
        outcomes = apply_items(
            store,
            output,
            item_type,
            context=context,
            any_program=any_program,
            run_id=run_id,
            run_url=run_url,
            policy=compaction_policy(app.config(), now=now),
            now=now,
            dry_run=dry_run,
            compactor=compactor_for(app),
        )
    if app.as_json:
        emit_json([o.as_dict() for o in outcomes])
    else:
        for outcome in outcomes:
            _report(app, outcome, store.max_bytes)
    failed = [o.exit_code for o in outcomes if o.action == "failed"]
    if failed:
        sys.exit(max(failed))


def _report(app: AppContext, o: ItemOutcome, max_bytes: int) -> None:
    who = f"item {o.index}" + (f" ({o.program})" if o.program else "")
    for warning in o.warnings:
        _warn(app, f"{who}: {warning}")
    if o.action == "failed":
        echo_error(f"{who}: {o.error}")
        _annotate(app, "error", shown(f"{who}: {o.error}"))
        return
    if o.action == "skipped":
        say(app, f"{who}: already on the branch ({o.marker}); skipped")
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
    """A GitHub Actions annotation, so the run's summary shows what went wrong with an item."""
    if app.env.get("GITHUB_ACTIONS") == "true":
        text = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        click.echo(f"::{level} title=statefile apply::{text}")


__all__ = ["apply_cmd", "prepare_cmd"]
