"""Backups (statefile.cli.backup, statefile.app.backup): export, and import back byte for byte."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gitutil import Repos, git, make_repos, run_statefile

from statefile.cli.demo import sample_text
from statefile.store import Store


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_repos(tmp_path)


def sf(repos: Repos, *args: str) -> subprocess.CompletedProcess[str]:
    return run_statefile("--remote", "origin", *args, cwd=repos.work)


def seed(repos: Repos, files: dict[str, str]) -> None:
    with Store.open(repos.work, remote="origin", max_bytes=10_000_000) as store:
        store.write_files(files, "seed")


def test_export_then_import_into_an_empty_branch_is_byte_identical(repos: Repos, tmp_path: Path) -> None:
    seed(repos, {"messy.md": sample_text("messy"), "long-running.md": sample_text("long-running")})
    assert sf(repos, "compact", "--all").returncode == 0
    out = tmp_path / "export.json"
    assert sf(repos, "export", "--out", str(out)).returncode == 0
    proc = sf(repos, "--branch", "memory/restored", "import", str(out))
    assert proc.returncode == 0, proc.stderr
    original = git("ls-tree", "-r", "memory/autoloop", cwd=repos.remote)
    restored = git("ls-tree", "-r", "memory/restored", cwd=repos.remote)
    assert original == restored and "archive/long-running/0001.md" in original


def test_import_rejects_damaged_exports_and_changes_nothing(repos: Repos, tmp_path: Path) -> None:
    seed(repos, {"messy.md": sample_text("messy")})
    out = tmp_path / "export.json"
    sf(repos, "export", "--out", str(out))
    data = json.loads(out.read_text())
    data["files"]["../escape.md"] = data["files"].pop("messy.md")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    tip = repos.remote_tip()
    for source in (bad, tmp_path / "missing.json"):
        proc = sf(repos, "import", str(source))
        assert proc.returncode in (2, 3) and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "notjson.json").write_text("{nope")
    assert sf(repos, "import", str(tmp_path / "notjson.json")).returncode == 2
    assert repos.remote_tip() == tip
