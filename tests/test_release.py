"""The release path: one version, its changelog section, install lines that pin it, and a wheel that works alone.

- The version lives in ``statefile/__init__.py`` only (pyproject reads it); CHANGELOG.md has its section, built by
  scriv from ``changelog.d/`` fragments, which the release workflow publishes as the GitHub release's notes.
- Every install line a user copies pins that version (``statefile==X.Y.Z``); ``OWNER`` only appears in the one
  documented fallback (a git commit, ahead of a release), never in a line that runs as shipped.
- The CI workflow runs the README's test command; the release workflow publishes by trusted publishing.
- The sdist and the wheel build with the release workflow's command (``python -m build``: an isolated build that
  fetches setuptools from PyPI, as the release does; ``--no-isolation`` would test whatever setuptools the venv
  has instead, and ``python3 -m venv`` installs none on 3.12+), pass ``twine check --strict``, and the wheel alone,
  in a fresh venv outside the checkout, runs ``statefile demo``: the samples, ``py.typed`` and the console script
  are in it.  That test needs PyPI (setuptools, the dependencies) and is marked slow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import installed_tool

import statefile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the package's own dependency on 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ROOT = Path(__file__).resolve().parents[1]
VERSION = statefile.__version__
TIMEOUT = 600
#: Every file that tells a user how to install statefile, and how many `statefile==` pins it holds at least.
INSTALL_DOCS = {
    "README.md": 1,
    "docs/agents.md": 2,
    "workflows/README.md": 2,
    "workflows/shared/statefile.md": 2,
    "workflows/statefile-maintenance.yml": 1,
}
_PIN = re.compile(r"statefile(?:\[\w+\])?==([\w.]+)")


def _workflow(name: str) -> dict[Any, Any]:
    data = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _on(workflow: dict[Any, Any]) -> Any:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True


# -- one version, its changelog --------------------------------------------------------------------------------


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "statefile.__version__"}
    assert project["tool"]["scriv"]["version"] == "literal: statefile/__init__.py: __version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


@pytest.mark.slow
def test_the_changelog_has_this_versions_section(tmp_path: Path) -> None:
    """What the release workflow publishes as the GitHub release's notes (``scriv print``), and the newest entry."""
    notes = tmp_path / "notes.md"
    done = subprocess.run([installed_tool("scriv"), "print", "--version", VERSION, "--output", str(notes)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "### Added" in notes.read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+) — \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings and headings[0] == VERSION, headings
    assert (ROOT / "changelog.d" / "README.md").is_file(), "scriv create writes into changelog.d/"


# -- install lines -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", sorted(INSTALL_DOCS))
def test_install_lines_pin_this_version(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    pins = _PIN.findall(text)
    assert len(pins) >= INSTALL_DOCS[doc] and set(pins) == {VERSION}, pins
    assert "@main" not in text, "an install line that follows main changes under its users"


@pytest.mark.parametrize("doc", ["workflows/shared/statefile.md", "workflows/statefile-maintenance.yml", "action.yml"])
def test_nothing_that_runs_as_shipped_names_owner(doc: str) -> None:
    """OWNER (the account hosting statefile) is only in the documented fallback: comments and descriptions."""
    for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
        if "OWNER" in line:
            assert line.lstrip().startswith("#") or doc == "action.yml", line
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["inputs"]["version"]["default"] == VERSION
    assert "OWNER" not in yaml.safe_dump(action["runs"])


# -- the project's workflows -------------------------------------------------------------------------------------


def test_ci_runs_the_readmes_test_command_on_the_oldest_and_newest_python() -> None:
    readme = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    test_command = next(c.strip() for c in readme if "'.[test]'" in c and "pytest" in c)
    ci = _workflow("ci.yml")
    assert set(_on(ci)) == {"push", "pull_request"}
    [job] = ci["jobs"].values()
    assert [step["run"] for step in job["steps"] if "run" in step] == [test_command]
    pythons = job["strategy"]["matrix"]["python"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == f">={pythons[0]}", "the oldest Python CI runs is the one declared"
    assert len(pythons) == 2 and tuple(map(int, pythons[1].split("."))) >= (3, 13)


def test_the_release_publishes_by_trusted_publishing() -> None:
    text = (ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    assert "secrets." not in text and "password" not in text, "no token in the repository: trusted publishing"
    release = _workflow("release.yml")
    assert _on(release) == {"push": {"tags": ["v*"]}} and release["permissions"] == {}
    jobs = release["jobs"]
    runs = "\n".join(step.get("run", "") for step in jobs["build"]["steps"])
    for command in ("python3 -m build", "twine check --strict dist/*", 'scriv print --version "$VERSION"',
                    "statefile.__version__"):  # fmt: skip
        assert command in runs, command
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"]["name"] == "pypi"
    assert [s["uses"].split("@")[0] for s in publish["steps"]][-1] == "pypa/gh-action-pypi-publish"
    assert all("with" not in s for s in publish["steps"] if "pypi-publish" in s["uses"]), "no token, no password"
    github = jobs["github-release"]
    assert github["needs"] == "publish" and github["permissions"] == {"contents": "write"}
    assert "--notes-file notes/release-notes.md" in github["steps"][-1]["run"]
    # Only the jobs that need it may write or mint a token.
    assert jobs["build"]["permissions"] == {"contents": "read"}


# -- the distributions -------------------------------------------------------------------------------------------


def _source_tree(dest: Path) -> Path:
    """The checkout as a fresh clone would have it (tracked and new, not ignored, files), so the build sees no
    leftovers (an egg-info, a build/ folder) and writes none into the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, timeout=60, check=False)  # fmt: skip
    if listed.returncode:
        pytest.skip(f"not a git checkout, so which files a clone has is unknown: {listed.stderr.decode().strip()}")
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / name)
    return dest


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}


@pytest.mark.slow
def test_the_wheel_alone_installs_and_runs_the_demo(tmp_path: Path) -> None:
    installed_tool("twine")
    source, dist = _source_tree(tmp_path / "source"), tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(source)], cwd=tmp_path,
                           capture_output=True, text=True, env=_clean_env(), timeout=TIMEOUT, check=False)  # fmt: skip
    if built.returncode and "No module named build" in built.stderr:
        pytest.skip("build is not installed (it is in the test extra: pip install -e '.[test]')")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [sdist] = dist.glob(f"statefile-{VERSION}.tar.gz")
    [wheel] = dist.glob(f"statefile-{VERSION}-py3-none-any.whl")

    twine = installed_tool("twine")
    checked = subprocess.run([twine, "check", "--strict", str(sdist), str(wheel)], capture_output=True, text=True,
                             env=_clean_env(), timeout=120, check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr

    samples = sorted(p.name for p in (ROOT / "samples").iterdir() if p.suffix in {".md", ".json"})
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        metadata = whl.read(f"statefile-{VERSION}.dist-info/METADATA").decode()
        entry_points = whl.read(f"statefile-{VERSION}.dist-info/entry_points.txt").decode()
    assert "statefile/py.typed" in names
    assert {f"statefile/samples/{name}" for name in samples} <= names and samples
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names), "only the package goes in the wheel"
    assert f"Version: {VERSION}\n" in metadata and "License-Expression: MIT" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    assert "statefile = statefile.cli:main" in entry_points
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "README.md", "statefile/py.typed", *(f"samples/{n}" for n in samples)} <= members

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True,
                               text=True, env=_clean_env(), timeout=TIMEOUT, check=False)  # fmt: skip
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"  # not the checkout: nothing of it can be imported by accident
    elsewhere.mkdir()
    where = subprocess.run([str(python), "-c", "import statefile; print(statefile.__file__)"], cwd=elsewhere,
                           capture_output=True, text=True, env=_clean_env(), timeout=60, check=True)  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    version = subprocess.run([str(venv / "bin" / "statefile"), "--version"], cwd=elsewhere, capture_output=True,
                             text=True, env=_clean_env(), timeout=60, check=False)  # fmt: skip
    assert version.returncode == 0 and VERSION in version.stdout, version.stdout + version.stderr
    demo = subprocess.run([str(venv / "bin" / "statefile"), "demo"], cwd=elsewhere, capture_output=True, text=True,
                          env=_clean_env(), timeout=300, check=False)  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "samples" in demo.stdout, demo.stdout[-3000:]
