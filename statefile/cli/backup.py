"""Backups: ``export`` every program's memory as one JSON document, ``import`` it back byte for byte.

Apart from the read and write commands because the export format carries checksums (hashlib, OpenSSL), which
the scheduler's pre-step should not load.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from statefile.app.context import AppContext
from statefile.cli.support import example, pass_app, say
from statefile.errors import ConflictError
from statefile.integrations.autoloop import write_text_atomic
from statefile.store import GitStore
from statefile.store.exchange import dumps, export_json, import_json, loads
from statefile.store.files import read_text_file


@click.command("export")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout.")
@example("statefile export --out memory.json")
@pass_app
def export_cmd(app: AppContext, out: Path | None) -> None:
    """Export every program and archive as one JSON document."""

    store = app.store()
    if isinstance(store, GitStore):
        data = export_json(store.read_all(), branch=store.branch, commit=store.tip())
    else:
        data = export_json(store.read_all(), branch="", commit=None)
    text = dumps(data)
    if out is None:
        click.echo(text, nl=False)
        return

    write_text_atomic(out, text)
    say(app, f"exported {len(data['files'])} files to {out}")


@click.command("import")
@click.argument("source", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Overwrite files that exist with different content.")
@example("statefile --branch memory/restored import memory.json")
@pass_app
def import_cmd(app: AppContext, source: Path, force: bool) -> None:
    """Import an export (all files, byte for byte) as one commit on the branch (or one write to --dir).

    Files that already exist with different content are refused unless --force: an old export would otherwise
    roll state back and orphan archived iterations.
    """

    raw = sys.stdin.read() if str(source) == "-" else _read(source)
    files = import_json(loads(raw))
    store = app.store()
    if not force:
        existing = store.read_all()
        clashes = sorted(path for path, text in files.items() if path in existing and existing[path] != text)
        if clashes:
            shown = ", ".join(clashes[:3]) + (f" and {len(clashes) - 3} more" if len(clashes) > 3 else "")
            raise ConflictError(
                f"{len(clashes)} file(s) exist with different content ({shown}); nothing was written — import into "
                "an empty branch (--branch NEW) or pass --force to overwrite"
            )
    commit = store.write_files(files, f"statefile: import {len(files)} files").commit
    say(app, f"imported {len(files)} files" + (f" ({commit[:10]})" if commit else ""))


def _read(path: Path) -> str:

    return read_text_file(path, bounded=False)  # an export holds every file of a branch
