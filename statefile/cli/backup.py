"""Backups: ``export`` every program's memory as one JSON document, ``import`` it back byte for byte."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from statefile.app.backup import export_memory, import_files
from statefile.app.context import AppContext
from statefile.cli.run import escaped
from statefile.cli.support import emit_json, example, pass_app, plural, say, unchanged
from statefile.errors import UsageError
from statefile.integrations.autoloop import write_text_atomic
from statefile.model.text import encode
from statefile.numbers import budget_text, number_text
from statefile.store.atomic import IMPORT_LIMIT
from statefile.store.base import decode_text
from statefile.store.exchange import import_json, loads
from statefile.store.files import read_text_file


@click.command("export")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout.")
@example("statefile export --out memory.json")
@pass_app
def export_cmd(app: AppContext, out: Path | None) -> None:
    """Export every program and archive as one JSON document."""

    text, count = export_memory(app.reader())
    if out is None:
        # C1 controls and bidi marks \u-escaped (the same JSON); a file written with --out keeps dumps' bytes.
        click.echo(escaped(text, in_json=True), nl=False)
        return
    write_text_atomic(out, text)
    say(app, f"exported {plural(count, 'file')} to {out}")


@click.command("import")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Overwrite files that exist with different content.")
@example("statefile --branch memory/restored import memory.json")
@pass_app
def import_cmd(app: AppContext, source: Path, force: bool) -> None:
    """Import an export (all files, byte for byte) as one commit on the branch (or one write to --dir).

    Whatever its size: a file the export holds over the budget is restored as it was (a backup must restore),
    and the output says which files need 'statefile compact'.  A drifted Machine State heading is then restored in
    a second commit, so the import commit itself is the backup, exactly.  Files that already exist with different
    content are refused unless --force: an old export would otherwise roll state back and orphan archived
    iterations.  The branch is created if it does not exist.
    """

    if str(source) == "-":
        data = sys.stdin.buffer.read(IMPORT_LIMIT + 1)
        if len(data) > IMPORT_LIMIT:
            raise UsageError(
                f"the export on stdin is over the {IMPORT_LIMIT:,} bytes statefile reads; nothing was read"
            )
        raw = decode_text(data, "stdin")
    else:
        raw = read_text_file(source, bounded=False)  # an export holds every file of a branch
    files = import_json(loads(raw))
    budget = app.config().max_bytes.value
    largest = max((len(encode(text)) for text in files.values()), default=0)
    if largest > budget:
        app = app.with_max_bytes(largest)  # restore what the export holds; compaction is a later step
    done = import_files(app.writer(create=True), files, budget=budget, force=force)
    if app.as_json:
        emit_json(dataclasses.asdict(done))
        return
    if not done.written:
        unchanged(app, f"all {plural(done.files, 'file')} of the export are already there, byte for byte")
    else:
        same = done.files - len(done.written)
        also = f" ({number_text(same)} already there)" if same else ""
        commit = f" ({done.commit[:10]})" if done.commit else ""
        say(app, f"imported {plural(len(done.written), 'file')}{also}{commit}")
    for path in done.over_budget:
        size = budget_text(len(encode(files[path])), budget)
        say(app, f"  {path} is over the budget at {size}, as in the export: "
                 f"'statefile compact {path[: -len('.md')]}' brings it under")  # fmt: skip
    for name in done.headings_restored:
        say(app, f"  restored the ⚙️ Machine State heading of {name}.md (a separate commit after the import)")
