"""Every hostile input of issue 15, built for real, and the statefile commands that could touch it.

Each case names the issue-15 case it keeps (``#1`` … ``#13``; ``absurd`` for absurd values anywhere, ``env`` for a
hostile environment).  Content cases run every reading and writing command on the input, in a folder store and on a
git branch where both apply; flag and environment cases run the commands that take that flag or read that setting.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hostile.suite import (
    AT_LEFT,
    AT_RIGHT,
    GH_TOKEN,
    KEY,
    LEFT,
    QUERY,
    RIGHT,
    SCP,
    TOKEN,
    TOML,
    Case,
    Command,
    Setup,
    cmd,
)
from hostile.workspace import (
    BRANCH,
    LOCAL,
    Entry,
    Gitlink,
    Link,
    Missing,
    Repos,
    fifo,
    git,
    hook,
    make_folder,
    make_repos,
    put_branch,
    state,
    with_field,
    with_history,
)

HUGE = "9" * 20  # 99999999999999999999: beyond any plausible iteration, count or budget
NOWHERE = "127.0.0.1:1"  # a port nothing listens on: connecting fails at once, no network involved
CASES: list[Case] = []


def case(name: str, keeps: str, *, ci: bool = False) -> Callable[[Callable[[Path], Setup]], Callable[[Path], Setup]]:
    """Register the decorated builder as a case."""

    def register(build: Callable[[Path], Setup]) -> Callable[[Path], Setup]:
        CASES.append(Case(name, keeps, build, ci))
        return build

    return register


def editor(code: str) -> str:
    """An $EDITOR that runs Python ``code`` with the file to edit as ``sys.argv[1]``."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


# -- the commands -------------------------------------------------------------------------------------------------


def reads(*pre: str, program: str = "perf") -> list[Command]:
    """Every command that reads ``program`` or the whole store (``pre``: global options such as ``--dir X``)."""
    p = program
    return [
        cmd(*pre, "show", p),
        cmd(*pre, "--json", "show", p),
        cmd(*pre, "render", p),
        cmd(*pre, "render", p, "--level", "index"),
        cmd(*pre, "render", p, "--level", "timeline", "--budget", "200"),
        cmd(*pre, "status", p),
        cmd(*pre, "status"),
        cmd(*pre, "history", p),
        cmd(*pre, "history", p, "--csv", "-n", "3"),
        cmd(*pre, "list"),
        cmd(*pre, "--json", "list", "--sort", "iterations"),
        cmd(*pre, "check"),
        cmd(*pre, "check", p),
        cmd(*pre, "search", "iteration"),
        cmd(*pre, "search", "change", "--program", p),
        cmd(*pre, "expand", p, "1"),
        cmd(*pre, "expand", p, "3"),
        cmd(*pre, "export"),
        cmd(*pre, "report", "--all"),
        cmd(*pre, "report", "--program", p),
        cmd(*pre, "summary"),
        cmd(*pre, "log", p, "-p"),
        cmd(*pre, "config"),
        cmd(*pre, "lesson", "list", p),
        cmd(*pre, "compact", p, "--dry-run", "--details"),
        cmd(*pre, "compact", "--all", "--dry-run"),
        cmd(*pre, "repair", p, "--dry-run"),
        cmd(*pre, "repair", "--all", "--dry-run"),
    ]


def writes(*pre: str, program: str = "perf") -> list[Command]:
    """Every command that writes ``program`` or the whole store."""
    p = program
    return [
        cmd(*pre, "record", p, "--status", "accepted", "--metric", "1.5", "--change", "hostile run", "--notes", "n."),
        cmd(*pre, "record", p, "--status", "rejected", "--metric", "0.5", "--lesson", "a hostile lesson"),
        cmd(*pre, "lesson", "add", p, "another hostile lesson"),
        cmd(*pre, "lesson", "remove", p, "1"),
        cmd(*pre, "lesson", "promote", p, "1"),
        cmd(*pre, "edit", p),
        cmd(*pre, "compact", p),
        cmd(*pre, "compact", "--all", "--aggressive"),
        cmd(*pre, "repair", p),
        cmd(*pre, "repair", "--all"),
        cmd(*pre, "init", "newprog"),
    ]


def everything(*pre: str, program: str = "perf") -> list[Command]:
    return reads(*pre, program=program) + writes(*pre, program=program)


def folder_case(root: Path, files: dict[str, str | bytes], **setup: object) -> Setup:
    """A folder store with ``files`` beside ``perf``/``other``; every command through ``--dir``."""
    folder = make_folder(root, files)
    return Setup(root, everything("--dir", str(folder)), **setup)  # type: ignore[arg-type]


def branch_case(root: Path, files: dict, *, push: bool = True, **setup: object) -> Setup:
    """A memory branch with ``files`` (raw entries) beside ``perf``/``other``; every command on the local branch."""
    repos = make_repos(root, files=files, push=push)
    return Setup(repos.work, everything(), **setup)  # type: ignore[arg-type]


def both(name: str, keeps: str, content: Callable[[], dict[str, str | bytes]], *, ci: bool = False) -> None:
    """A content case in a folder store and on a git branch."""
    case(f"{name} (folder)", keeps, ci=ci)(lambda root: folder_case(root, content()))
    case(f"{name} (branch)", keeps)(lambda root: branch_case(root, content()))


# -- #1: numbers in headings beyond any history --------------------------------------------------------------------

both(
    "typo range 2–1000000000000",
    "#1",
    lambda: {"perf.md": with_history(state(), "### Iters 2–1000000000000 — typo")},
    ci=True,
)
both("date typed as a range", "#1", lambda: {"perf.md": with_history(state(), "### Iterations 20260101–20260115")})
both(
    "huge iteration heading",
    "#1",
    lambda: {
        "perf.md": with_history(
            state(), f"### Iteration {HUGE} — 2026-01-01 00:00 UTC — [Run](https://example.com/r)\n\n- **Status**: ✅"
        )
    },
)
both("wide plausible range", "#1", lambda: {"perf.md": with_history(state(), "### Iterations 30–9999999 — wide")})
both("huge Iteration Count", "#1", lambda: {"perf.md": with_field(state(), "Iteration Count", HUGE)})
both(
    "many typo ranges",
    "#1",
    lambda: {"perf.md": with_history(state(), *(f"### Iters {i}–{10**12 + i} — typo {i}" for i in range(200)))},
)


@case("a typo range saved through edit", "#1")
def _edit_typo(root: Path) -> Setup:
    repos = make_repos(root)
    code = (
        "import sys; p = sys.argv[1]; t = open(p, encoding='utf-8').read(); "
        "m = '<!-- New entries are prepended below this line -->\\n'; "
        "open(p, 'w', encoding='utf-8').write(t.replace(m, m + '\\n### Iters 2–1000000000000 — typo\\n', 1))"
    )
    return Setup(repos.work, [cmd("edit", "perf", env={"EDITOR": editor(code)}), *everything()])


@case("huge numbers in flags", "#1", ci=True)
def _huge_flags(root: Path) -> Setup:
    repos = make_repos(root)
    big = str(10**30)
    rec = ("record", "perf", "--status", "accepted")
    autoloop = root / "autoloop.json"
    autoloop.write_text(json.dumps({"selected": "perf"}))
    commands = [
        cmd(*rec, "--iteration", HUGE, refuse=True),
        cmd(*rec, "--iteration", "10000001", refuse=True),
        cmd(*rec, "--pr", HUGE, refuse=True),  # GitHub numbers stop at 2**31 - 1
        cmd(*rec, "--issue", HUGE, refuse=True),
        cmd(*rec, "--ci-fix-attempts", HUGE),
        cmd("init", "big", "--issue", HUGE, "--pr", HUGE, refuse=True),
        cmd("expand", "perf", HUGE, refuse=True),
        cmd("expand", "perf", "0", refuse=True),
        cmd("expand", "perf", "-1", refuse=True),
        cmd("expand", "perf", "1e3", refuse=True),
        cmd("history", "perf", "-n", HUGE),
        cmd("log", "perf", "-n", HUGE),
        cmd("search", "iteration", "-n", HUGE),
        cmd("render", "perf", "--budget", HUGE),
        cmd("prepare", "--autoloop-json", str(autoloop), "--out", str(root / "out"), "--budget", HUGE),
        cmd("summary", "--max-charts", HUGE),
        cmd("--max-bytes", big, "list", refuse=True),  # sizes stop at 1 GiB
        cmd("--max-bytes", big, *rec, "--metric", "2", refuse=True),
        cmd("--max-bytes", "1e999", "list", refuse=True),
        cmd("--max-bytes", "0", "list", refuse=True),
        cmd("--max-bytes", "-5", "list", refuse=True),
        cmd("--max-bytes", "nan", "list", refuse=True),
        cmd("--max-bytes", "30 KB", "list"),
        cmd("check", "--max-bytes", HUGE, refuse=True),
        cmd("compact", "perf", "--max-bytes", "1"),
        cmd("list", env={"STATEFILE_MAX_BYTES": big}, refuse=True),
        cmd("list", env={"STATEFILE_MAX_BYTES": "inf"}, refuse=True),
    ]
    return Setup(repos.work, commands)


# -- #2: a push that landed although the connection dropped ---------------------------------------------------------


def _iterations_once(repos: Repos) -> list[str]:
    text = git("show", f"{BRANCH}:perf.md", cwd=repos.remote)
    numbers = [line.split()[2] for line in text.splitlines() if line.startswith("### Iteration ")]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    return [f"iterations recorded twice on the remote: {', '.join(twice)}"] if twice else []


@case("push lands, then the connection drops", "#2")
def _push_dropped(root: Path) -> Setup:
    repos = make_repos(root)
    hook(repos.remote, "post-receive", "kill -9 $PPID")  # receive-pack dies after the ref was updated
    rec = ("--remote", "origin", "record", "perf", "--status", "accepted", "--metric", "3")
    commands = [
        cmd(*rec, succeed=True),
        cmd(*rec, succeed=True),
        cmd("--remote", "origin", "list", succeed=True),
        cmd("--remote", "origin", "sync"),
        cmd("--remote", "origin", "lesson", "add", "perf", "x"),
    ]
    return Setup(repos.work, commands, after=lambda: _iterations_once(repos))


# -- #3: the memory branch is a symbolic ref ------------------------------------------------------------------------


def _unmoved(repo: Path, ref: str, before: str, work: Path | None = None) -> Callable[[], list[str]]:
    def check() -> list[str]:
        problems = []
        now = git("rev-parse", ref, cwd=repo).strip()
        if now != before:
            problems.append(f"{ref} moved")
        if work is not None and git("status", "--porcelain", cwd=work).strip():
            problems.append("the work tree changed: " + git("status", "--porcelain", cwd=work).strip()[:200])
        return problems

    return check


@case("memory branch a symref to the checked-out main", "#3")
def _symref(root: Path) -> Setup:
    repos = make_repos(root)
    git("symbolic-ref", LOCAL, "refs/heads/main", cwd=repos.work)
    before = repos.tip("refs/heads/main")
    return Setup(repos.work, everything(), after=_unmoved(repos.work, "refs/heads/main", before, repos.work))


@case("remote memory branch a symref to main", "#3")
def _remote_symref(root: Path) -> Setup:
    repos = make_repos(root)
    git("symbolic-ref", LOCAL, "refs/heads/main", cwd=repos.remote)
    before = repos.tip("refs/heads/main", repos.remote)
    clone = root / "clone"
    git("clone", "--quiet", str(repos.remote), str(clone), cwd=root)
    return Setup(clone, everything("--remote", "origin"), after=_unmoved(repos.remote, "refs/heads/main", before))


# -- #4: credentials everywhere they can be written -----------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def remote_commands(*pre: str) -> list[Command]:
    """Commands that show settings or reach the remote."""
    return [
        cmd(*pre, "config"),
        cmd(*pre, "--json", "config"),
        cmd(*pre, "list"),
        cmd(*pre, "show", "perf"),
        cmd(*pre, "render", "perf"),
        cmd(*pre, "status", "perf"),
        cmd(*pre, "report", "--all"),
        cmd(*pre, "export"),
        cmd(*pre, "log", "perf"),
        cmd(*pre, "summary"),
        cmd(*pre, "sync"),
        cmd(*pre, "sync", "--dry-run"),
        cmd(*pre, "record", "perf", "--status", "accepted", "--metric", "2"),
        cmd(*pre, "init", "newprog"),
        cmd(*pre, "compact", "--all"),
        cmd(*pre, "mcp", "--check"),
    ]


SECRET_URLS = {
    "user and token": f"https://user:{TOKEN}@{NOWHERE}/o/r.git",
    "password with a slash": f"https://user:{LEFT}/{RIGHT}@{NOWHERE}/o/r.git",
    "password with an @": f"https://user:{AT_LEFT}@{AT_RIGHT}@{NOWHERE}/o/r.git",
    "access_token query": f"https://{NOWHERE}/o/r.git?access_token={QUERY}",
    "token as the user": f"http://{TOKEN}@{NOWHERE}/o/r.git",
    "scp form with a password": f"tok:{SCP}@127.0.0.1:o/r.git",
    "ssh with a password": f"ssh://git:{TOKEN}@{NOWHERE}/o/r.git",
    "percent-encoded password": f"https://user:{LEFT}%2F{RIGHT}@{NOWHERE}/o/r.git",
}


def _secret_case(label: str, url: str) -> None:
    @case(f"credentials in STATEFILE_REMOTE: {label}", "#4", ci=label == "password with a slash")
    def _env(root: Path) -> Setup:
        repos = make_repos(root)
        return Setup(repos.work, remote_commands(), env={"STATEFILE_REMOTE": url, "GIT_TRACE": "1"})

    @case(f"credentials in --remote: {label}", "#4")
    def _flag(root: Path) -> Setup:
        repos = make_repos(root)
        return Setup(repos.work, remote_commands("--remote", url))


for _label, _url in SECRET_URLS.items():
    _secret_case(_label, _url)


@case("credentials in .statefile.toml and pyproject.toml", "#4", ci=True)
def _toml_secret(root: Path) -> Setup:
    repos = make_repos(root)
    (repos.work / ".statefile.toml").write_text(
        f'remote = "https://user:{TOML}/{RIGHT}@{NOWHERE}/o/r.git"\n'
        f'summarizer = "OPENAI_API_KEY={KEY} summarize --model x"\n'
    )
    return Setup(repos.work, remote_commands())


@case("credentials in a configured remote's URL", "#4")
def _configured(root: Path) -> Setup:
    repos = make_repos(root)
    git("remote", "set-url", "origin", f"https://user:{LEFT}/{RIGHT}@{NOWHERE}/o/r.git", cwd=repos.work)
    return Setup(repos.work, remote_commands("--remote", "origin"), env={"GIT_TRACE": "1"})


class EchoServer:
    """A smart-HTTP "git server" on loopback that answers every request with a git protocol error quoting the
    request's Authorization header and URL back — a hostile server making git print the credentials it was sent."""

    CODE = r"""
import base64, http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        decoded = ""
        if auth.lower().startswith("basic "):
            decoded = base64.b64decode(auth[6:]).decode("utf-8", "replace")
        body = f"# service=git-upload-pack\n"
        pkt = lambda s: f"{len(s) + 4:04x}{s}"
        text = pkt(body) + "0000" + pkt(f"ERR you sent {auth} ({decoded}) for {self.path}\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
        self.end_headers()
        self.wfile.write(text.encode())
    do_POST = do_GET
    def log_message(self, *a): pass
with socketserver.TCPServer(("127.0.0.1", int(sys.argv[1])), H) as s:
    print("ready", flush=True)
    s.serve_forever()
"""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE, str(self.port)], stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == b"ready"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@case("a server that echoes the credentials back", "#4")
def _echo(root: Path) -> Setup:
    repos = make_repos(root)
    server = EchoServer()
    host = f"127.0.0.1:{server.port}"
    commands = [
        *remote_commands("--remote", f"http://user:{LEFT}/{RIGHT}@{host}/o/r.git"),
        *remote_commands("--remote", f"http://{host}/o/r.git?access_token={QUERY}"),
        # GITHUB_TOKEN goes to GITHUB_SERVER_URL's host (loopback over http is allowed): the server quotes it.
        *remote_commands("--remote", f"http://{host}/o/r.git"),
    ]
    env = {
        "GITHUB_TOKEN": GH_TOKEN,
        "GITHUB_SERVER_URL": f"http://{host}",
        "GIT_TRACE": "1",
        "GIT_TRACE_CURL": "1",
        "GIT_TRACE_REDACT": "0",
    }
    secrets = (_b64(f"user:{LEFT}/{RIGHT}"), _b64(f"x-access-token:{GH_TOKEN}"))
    return Setup(repos.work, commands, env=env, secrets=secrets, cleanup=server.stop)


@case("GITHUB_TOKEN and GH_TOKEN set, remote on github.com", "#4")
def _github_token(root: Path) -> Setup:
    repos = make_repos(root)
    env = {"GITHUB_TOKEN": GH_TOKEN, "GH_TOKEN": GH_TOKEN, "GIT_TRACE": "1"}
    secrets = (_b64(f"x-access-token:{GH_TOKEN}"),)
    return Setup(repos.work, remote_commands("--remote", "https://github.com/o/r.git"), env=env, secrets=secrets)


# -- #5: FIFOs, devices and endless files where statefile reads or writes ------------------------------------------


def _fifo_folder(where: str) -> Callable[[Path], Setup]:
    def build(root: Path) -> Setup:
        folder = make_folder(root, {"archive/perf/0001.md": "## Archived\n\n### Iteration 1 — x\n"})
        fifo(folder / where)
        return Setup(root, everything("--dir", str(folder)))

    return build


for _where in ("perf.md", "archive/perf/0001.md", "archive/perf/0002.md", "_shared.md", ".statefile.lock"):
    case(f"FIFO at {_where} in a folder store", "#5", ci=_where == "perf.md")(_fifo_folder(_where))


@case("a folder where the lock file goes", "#5")
def _lock_dir(root: Path) -> Setup:
    folder = make_folder(root)
    (folder / ".statefile.lock").mkdir()
    return Setup(root, writes("--dir", str(folder)))


def _fifo_repo(where: str, *pre: str) -> Callable[[Path], Setup]:
    def build(root: Path) -> Setup:
        repos = make_repos(root)
        fifo(repos.work / where)
        return Setup(repos.work, everything(*pre))

    return build


for _where in (".statefile.toml", "pyproject.toml", ".github/workflows/autoloop.md"):
    case(f"FIFO at {_where} in the repository", "#5")(_fifo_repo(_where))
case("FIFO as the workflow, with --repo-memory", "#5")(_fifo_repo(".github/workflows/autoloop.md", "--repo-memory"))


def _file_arguments(path: str, root: Path) -> list[Command]:
    """Every option and argument that names a file to read, pointed at ``path``."""
    rec = ("record", "perf", "--status", "accepted", "--metric", "1")
    return [
        cmd(*rec, "--autoloop-json", path, refuse=True),
        cmd(*rec, env={"STATEFILE_AUTOLOOP_JSON": path}, refuse=True),
        cmd("report", "--out", path, refuse=True),
        cmd("prepare", "--autoloop-json", path, "--out", str(root / "out"), refuse=True),
        cmd("import", path, refuse=True),
        cmd("apply", "--agent-output", path, refuse=True),
        cmd("apply", "--agent-output", str(root / "items.json"), "--context", path, refuse=True),
        cmd("show", path, refuse=True),
        cmd("check", path, refuse=True),
        cmd("compact", path, refuse=True),
        cmd("repair", path, refuse=True),
        cmd("--dir", path, "list", refuse=True),
        cmd("--repo", path, "list", refuse=True),
        cmd("summary", "--out", path),
        cmd("export", "--out", path),
    ]


@case("FIFOs named as file arguments", "#5", ci=True)
def _fifo_arguments(root: Path) -> Setup:
    repos = make_repos(root)
    (root / "items.json").write_text(json.dumps({"items": [{"type": "record_iteration", "program": "perf"}]}))
    path = fifo(root / "pipe.json")
    # Writing into a FIFO nobody reads waits forever as well: those two must not hang either.
    return Setup(repos.work, _file_arguments(str(path), root))


DEVICES = ("/dev/zero", "/dev/urandom", "/dev/null", "/dev/full", "/dev/stdin")


@case("devices named as file arguments", "#5")
def _devices(root: Path) -> Setup:
    """Every file argument pointed at a device — through a symbolic link in the case's folder, so that a command
    that replaced the file it was given (as root, an atomic write replaced /dev/full once) replaces only the link."""
    repos = make_repos(root)
    (root / "items.json").write_text(json.dumps({"items": [{"type": "record_iteration", "program": "perf"}]}))
    links = {}
    for device in DEVICES:
        links[device] = root / f"dev-{Path(device).name}"
        links[device].symlink_to(device)
    commands: list[Command] = []
    for link in links.values():
        commands += [c for c in _file_arguments(str(link), root) if c.args[0] not in ("summary", "export")]
    for device in ("/dev/full", "/dev/null"):
        commands += [cmd("summary", "--out", str(links[device])), cmd("export", "--out", str(links[device]))]
        commands += [cmd("report", "--all", "--out", str(links[device]))]

    def after() -> list[str]:
        problems = [f"{link.name} was replaced" for device, link in links.items() if os.readlink(link) != device]
        return problems + [f"{d} is no longer a device" for d in DEVICES if not Path(d).resolve().is_char_device()]

    return Setup(repos.work, commands, after=after)


@case("endless files behind symlinks", "#5")
def _endless(root: Path) -> Setup:
    repos = make_repos(root)
    for name in (".statefile.toml", "pyproject.toml"):
        (repos.work / name).symlink_to("/dev/zero")
    (repos.work / ".github" / "workflows").mkdir(parents=True)
    (repos.work / ".github" / "workflows" / "autoloop.md").symlink_to("/dev/urandom")
    (root / "auto.json").symlink_to("/dev/zero")
    rec = ("record", "perf", "--status", "accepted", "--metric", "1")
    return Setup(
        repos.work, [*reads(), cmd("--repo-memory", "config"), cmd(*rec, "--autoloop-json", str(root / "auto.json"))]
    )


# -- #6: absurd values, missing objects, full disks, read-only repositories, editors -------------------------------

both("Best Metric 1e999999999", "#6", lambda: {"perf.md": with_field(state(), "Best Metric", "1e999999999")}, ci=True)


def _targets() -> dict[str, str | bytes]:
    values = {
        "t-nan": "nan",
        "t-inf": "inf",
        "t-minf": "-inf",
        "t-big": "1e999",
        "t-hex": "0x1p3",
        "t-20": "9" * 20,
        "t-tiny": "1e-999999",
        "t-words": "ninety",
        "t-5000": "9" * 5000,
    }
    return {f"{name}.md": with_field(state(3, name), "Target Metric", value) for name, value in values.items()}


both("absurd Target Metric values", "#6", _targets)
both(
    "absurd Machine State values",
    "absurd",
    lambda: {
        "perf.md": with_field(
            with_field(
                with_field(
                    with_field(with_field(state(), "Last Run", "99999-12-31T00:00:00Z"), "Consecutive Errors", HUGE),
                    "Recent Statuses",
                    ", ".join(["error"] * 5000),
                ),
                "Metric Direction",
                "sideways",
            ),
            "Paused",
            "maybe",
        ),
        "other.md": with_field(state(3, "other"), "Last Run", "2026-02-30T25:61:61Z"),
    },
)


@case("absurd metric, time and target flags", "#6", ci=True)
def _absurd_flags(root: Path) -> Setup:
    repos = make_repos(root)
    rec = ("record", "perf", "--status", "accepted")
    commands = [
        cmd(*rec, "--metric", value, refuse=True)
        for value in ("1e999999999", "nan", "inf", "-inf", "1e-999999999x", "1_000x", "0x10", "1" * 5000)
    ]
    commands += [
        cmd(*rec, "--metric", "1", "--at", value, refuse=True)
        for value in ("9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00", "2026-13-45", "1e10", "now", "")
    ]
    commands += [
        cmd("init", f"t{i}", "--target-metric", value)
        for i, value in enumerate(("nan", "inf", "1e400", "12345678901234567891", "1e-400", "-0", "9" * 5000))
    ]
    commands += [cmd("list"), cmd("check"), cmd("report", "--all"), cmd("summary")]
    return Setup(repos.work, commands)


def _exports() -> dict[str, str]:
    base = {"format": "statefile-export", "version": 1, "branch": BRANCH}
    return {
        "huge-version": '{"format": "statefile-export", "version": ' + "9" * 5000 + ', "files": {}}',
        "deep-nesting": "[" * 100_000 + "]" * 100_000,
        "deep-object": '{"a":' * 50_000 + "1" + "}" * 50_000,
        "huge-float": '{"format": "statefile-export", "version": 1e999, "files": {}}',
        "nan": '{"format": "statefile-export", "version": NaN, "files": {}}',
        "text-not-string": json.dumps({**base, "files": {"perf.md": {"text": 123}}}),
        "files-a-list": json.dumps({**base, "files": ["perf.md"]}),
        "wrong-sha": json.dumps({**base, "files": {"x.md": {"text": "x\n", "sha256": "0" * 64, "bytes": 2}}}),
        "negative-bytes": json.dumps({**base, "files": {"x.md": {"text": "x\n", "bytes": -1}}}),
        "ten-thousand-files": json.dumps({**base, "files": {f"p{i}.md": {"text": "x\n"} for i in range(10_000)}}),
        "not-utf8": '{"format": "statefile-export", "files": {"x.md": {"text": "\udcff"}}}',
        "empty": "",
        "bom": "\ufeff{}",
    }


@case("hostile exports given to import", "#6")
def _hostile_imports(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for name, text in _exports().items():
        path = root / f"{name}.json"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        commands.append(cmd("import", str(path), refuse=True))
        commands.append(cmd("--dir", str(root), "import", str(path), refuse=True))
    return Setup(repos.work, commands)


@case("a missing blob on the branch", "#6", ci=True)
def _missing_blob(root: Path) -> Setup:
    repos = make_repos(root, push=False)
    put_branch(repos.work, {"perf.md": Missing(), "archive/other/0001.md": Missing("3" * 40)})
    return Setup(repos.work, everything())


@case("a missing blob in a program's archive", "#6")
def _missing_archive(root: Path) -> Setup:
    repos = make_repos(root, push=False)
    put_branch(repos.work, {"archive/perf/0001.md": Missing()})
    return Setup(repos.work, everything())


def _disk(kind: str) -> Callable[[Path], Setup]:
    def build(root: Path) -> Setup:
        repos = make_repos(root)
        folder = make_folder(root)
        commands = [Command(c.args, disk=kind) for c in writes()]
        commands += [Command(c.args, disk=kind) for c in writes("--dir", str(folder))]
        commands += [Command(c.args, disk=kind) for c in writes("--remote", "origin")[:3]]
        commands += [
            cmd("export", "--out", str(root / "export.json"), disk=kind),
            cmd("summary", "--out", str(root / "summary.md"), disk=kind),
            cmd("prepare", "--autoloop-json", str(root / "auto.json"), "--out", str(root / "out"), disk=kind),
            cmd("report", "--all", "--out", str(root / "auto.json"), disk=kind),
            cmd("list", disk=kind, succeed=True),
            cmd("--dir", str(folder), "render", "perf", disk=kind, succeed=True),
        ]
        (root / "auto.json").write_text(json.dumps({"selected": "perf"}))
        return Setup(repos.work, commands)

    return build


case("a full disk", "#6")(_disk("full"))
case("a read-only file system", "#6")(_disk("read-only"))


@case("output into a full device or a closed pipe", "#6", ci=True)
def _stdout(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for how in ("full", "gone"):
        commands += [Command(c.args, stdout=how) for c in reads()]
        commands.append(Command(("--help",), stdout=how))
        commands.append(Command(("--version",), stdout=how))
    return Setup(repos.work, commands)


EDITORS = {
    "deletes its file": "import os, sys; os.remove(sys.argv[1])",
    "leaves a FIFO": "import os, sys; os.remove(sys.argv[1]); os.mkfifo(sys.argv[1])",
    "leaves a link to /dev/zero": "import os, sys; os.remove(sys.argv[1]); os.symlink('/dev/zero', sys.argv[1])",
    "leaves a directory": "import os, sys; os.remove(sys.argv[1]); os.mkdir(sys.argv[1])",
    "writes invalid UTF-8": "import sys; open(sys.argv[1], 'ab').write(b'\\xff\\xfe bad')",
    "writes 100 MB": "import sys; open(sys.argv[1], 'ab').write(b'x' * 100_000_000)",
    "writes NUL bytes": "import sys; open(sys.argv[1], 'ab').write(b'\\x00' * 1000)",
    "empties the file": "import sys; open(sys.argv[1], 'w').close()",
    "removes the history": (
        "import sys; p = sys.argv[1]; t = open(p).read(); open(p, 'w').write(t.split('### Iteration')[0])"
    ),
    "exits 1": "import sys; sys.exit(1)",
    "kills itself": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "makes the file unreadable": "import os, sys; os.chmod(sys.argv[1], 0)",
}


@case("editors that misbehave", "#6")
def _editors(root: Path) -> Setup:
    repos = make_repos(root)
    folder = make_folder(root)
    commands = []
    for code in EDITORS.values():
        commands.append(cmd("edit", "perf", env={"EDITOR": editor(code)}))
        commands.append(cmd("--dir", str(folder), "edit", "perf", env={"EDITOR": editor(code)}))
    for value in ("/nonexistent/editor", "", '"unbalanced', "true --option-it-ignores"):
        commands.append(cmd("edit", "perf", env={"EDITOR": value}))
    commands += [
        cmd("expand", "perf", "1", succeed=True),
        cmd("--dir", str(folder), "expand", "perf", "1", succeed=True),
    ]
    return Setup(repos.work, commands)


# -- #7: what is not a regular file where a state file should be ---------------------------------------------------


def _not_regular(entry: Entry) -> Callable[[Path], Setup]:
    def build(root: Path) -> Setup:
        repos = make_repos(root, files={"perf.md": entry}, push=False)
        gate = [
            cmd("check", refuse=True),
            cmd("list", shows="perf"),
            cmd("compact", "--all", refuse=True),
            cmd("show", "perf", refuse=True),
        ]
        return Setup(repos.work, gate + everything())

    return build


case("a symlink named perf.md on the branch", "#7", ci=True)(_not_regular(Link("../../etc/passwd")))
case("a submodule named perf.md on the branch", "#7")(_not_regular(Gitlink()))


@case("a tree named perf.md on the branch", "#7")
def _tree_named(root: Path) -> Setup:
    repos = make_repos(root, push=False)
    put_branch(repos.work, {"perf.md": None})
    put_branch(repos.work, {"perf.md/inner.md": state()})
    gate = [cmd("check", refuse=True), cmd("list", shows="perf"), cmd("compact", "--all", refuse=True)]
    return Setup(repos.work, gate + everything())


@case("a symlink as _shared.md and an archive part", "#7")
def _links_elsewhere(root: Path) -> Setup:
    repos = make_repos(
        root, push=False, files={"_shared.md": Link("/etc/passwd"), "archive/perf/0001.md": Link("../../perf.md")}
    )
    return Setup(repos.work, [cmd("check", refuse=True), *everything()])


def _folder_not_regular(make: Callable[[Path], None]) -> Callable[[Path], Setup]:
    def build(root: Path) -> Setup:
        folder = make_folder(root)
        target = folder / "perf.md"
        target.unlink()
        make(target)
        gate = [
            cmd("--dir", str(folder), "check", refuse=True),
            cmd("--dir", str(folder), "list", shows="perf"),
            cmd("--dir", str(folder), "compact", "--all", refuse=True),
        ]
        return Setup(root, gate + everything("--dir", str(folder)))

    return build


case("a symlink out of the folder store", "#7")(_folder_not_regular(lambda p: p.symlink_to("/etc/passwd")))
case("a symlink loop in the folder store", "#7")(_folder_not_regular(lambda p: p.symlink_to(p.name)))
case("a folder named perf.md in the folder store", "#7")(_folder_not_regular(lambda p: p.mkdir()))
case("a socket named perf.md in the folder store", "#7")(
    _folder_not_regular(lambda p: socket.socket(socket.AF_UNIX).bind(str(p)))
)


# -- #9: import of paths git's fsck refuses ------------------------------------------------------------------------

ALIASES = [
    "GIT~1/config",
    "git~1/HEAD",
    "GITMOD~1",
    ".git/config",
    ".GIT/config",
    ".Git/hooks/post-checkout",
    ".git./config",
    ".git /config",
    ".g\u200cit/config",
    "a/.git/config",
    ".gitmodules",
    "GITMOD~1.md",
    "../escape.md",
    "/absolute.md",
    "a\\..\\b.md",
    "con.md",
    "aux/x.md",
    "PERF.md",
    "a//b.md",
    "nul.md",
    "x\x00.md",
    "x\n.md",
    "archive/perf/../../../x.md",
    "." * 300 + ".md",
]


@case("import of paths git's fsck refuses", "#9", ci=True)
def _aliases(root: Path) -> Setup:
    repos = make_repos(root)
    before = repos.tip()
    commands = []
    for i, path in enumerate(ALIASES):
        export = {"format": "statefile-export", "version": 1, "branch": BRANCH, "files": {path: {"text": "x\n"}}}
        source = root / f"alias{i}.json"
        source.write_text(json.dumps(export))
        commands.append(cmd("import", str(source), refuse=True))

    def after() -> list[str]:
        problems = [] if repos.tip() == before else ["the branch moved"]
        fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repos.work, capture_output=True, text=True)
        return problems + ([f"git fsck --strict: {fsck.stdout + fsck.stderr}"[:300]] if fsck.returncode else [])

    return Setup(repos.work, commands, after=after)


# -- #10: branch names that are not branches -----------------------------------------------------------------------

BRANCHES = [
    "HEAD",
    "FETCH_HEAD",
    "ORIG_HEAD",
    "MERGE_HEAD",
    "@",
    "HEAD~1",
    "main^",
    "-x",
    "--upload-pack=touch x",
    "a..b",
    "x.lock",
    "memory/autoloop.lock",
    "a//b",
    "x/",
    "/x",
    ".hidden",
    "a b",
    "a\x7fb",
    "x@{1}",
    "a:b",
    "a?b",
    "a*b",
    "a[b",
    "b" * 100_000,
    "",
]


@case("branch names that are not branches", "#10", ci=True)
def _branches(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for index, name in enumerate(BRANCHES):
        commands.append(
            cmd("--branch", name, "record", "perf", "--create", "--status", "accepted", "--metric", "1", refuse=True)
        )
        # Every name through the writer; one in three through a reader and the variable too (the one check serves
        # all three ways in: trying each name each way would triple the case for nothing new).
        if index % 3 == 0:
            commands.append(cmd("--branch", name, "list", refuse=True))
        if index % 3 == 1 and name:  # an empty variable is an unset one (the default branch), as in the environment
            commands.append(cmd("list", env={"STATEFILE_BRANCH": name}, refuse=True))
    refs_before = git("for-each-ref", "--format=%(refname)", cwd=repos.work)

    def after() -> list[str]:
        refs = git("for-each-ref", "--format=%(refname)", cwd=repos.work)
        return [] if refs == refs_before else [f"refs changed: {refs.strip()!r}"[:300]]

    return Setup(repos.work, commands, after=after)


# -- #12: messages ----------------------------------------------------------------------------------------------------


@case("usage errors", "#12")
def _usage(root: Path) -> Setup:
    repos = make_repos(root)
    commands = [
        cmd(*args, refuse=True)
        for args in (
            ("--no-such-option",),
            ("show",),
            ("show", "perf", "extra"),
            ("list", "--sort", "sideways"),
            ("record", "perf"),
            ("no-such-command",),
            ("render", "perf", "--level", "all"),
            ("history", "perf", "-n", "x"),
            ("lesson", "nope", "perf"),
            ("--max-bytes", "lots", "list"),
            ("init",),
            ("search",),
            ("record", "perf", "--status", "accepted", "--metric"),
            ("--repo",),
            ("log", "perf", "-n", "0"),
        )
    ]
    commands.append(cmd("lesson", succeed=False))
    return Setup(repos.work, commands)


@case("a 100 KB program name", "#12", ci=True)
def _long_name(root: Path) -> Setup:
    repos = make_repos(root)
    name = "p" * 100_000
    commands = [
        cmd(*args, refuse=True)
        for args in (
            ("show", name),
            ("render", name),
            ("record", name, "--status", "accepted"),
            ("init", name),
            ("expand", name, "1"),
            ("history", name),
            ("status", name),
            ("lesson", "add", name, "x"),
            ("search", "x", "--program", name),
        )
    ]
    commands += [cmd("search", name), cmd("record", "perf", "--status", "accepted", "--change", "c" * 100_000)]
    return Setup(repos.work, commands)


@case("a stale ref lock on the remote", "#12")
def _remote_lock(root: Path) -> Setup:
    repos = make_repos(root)
    (repos.remote / "refs" / "heads" / "memory" / "autoloop.lock").write_text("stale\n")
    return Setup(repos.work, remote_commands("--remote", "origin"))


@case("a pre-receive hook that refuses, saying why at length", "#12")
def _hook(root: Path) -> Setup:
    repos = make_repos(root)
    hook(repos.remote, "pre-receive", "echo 'policy: memory writes are frozen'\nseq 1 500 >&2\nexit 1")
    return Setup(repos.work, remote_commands("--remote", "origin"))


@case("a stale local lock while reading through the remote", "#12")
def _local_lock(root: Path) -> Setup:
    repos = make_repos(root)
    other = root / "other"
    git("clone", "--quiet", str(repos.remote), str(other), cwd=root)
    git("fetch", "--quiet", "origin", f"{BRANCH}:{BRANCH}", cwd=other)
    put_branch(other, {"perf.md": with_history(state(), "### Iteration 99 — newer")})
    git("push", "--quiet", "origin", BRANCH, cwd=other)
    (repos.work / ".git" / "refs" / "remotes" / "origin" / "memory").mkdir(parents=True, exist_ok=True)
    (repos.work / ".git" / "refs" / "remotes" / "origin" / "memory" / "autoloop.lock").write_text("")
    (repos.work / ".git" / "refs" / "heads" / "memory").mkdir(parents=True, exist_ok=True)
    (repos.work / ".git" / "refs" / "heads" / "memory" / "autoloop.lock").write_text("")
    return Setup(repos.work, reads("--remote", "origin") + writes("--remote", "origin")[:2])


@case("git environment variables", "env")
def _git_env(root: Path) -> Setup:
    repos = make_repos(root)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    dot_git = str(repos.work / ".git")
    commands = [
        cmd("list", cwd=elsewhere, env={"GIT_DIR": dot_git}, succeed=True),
        cmd("record", "perf", "--status", "accepted", "--metric", "1", cwd=elsewhere, env={"GIT_DIR": dot_git}),
        cmd("list", env={"GIT_DIR": "/nonexistent"}, refuse=True),
        cmd("list", env={"GIT_DIR": "/dev/null"}, refuse=True),
        cmd("list", env={"GIT_OBJECT_DIRECTORY": "/nonexistent"}),
        cmd("record", "perf", "--status", "accepted", "--metric", "1", env={"GIT_OBJECT_DIRECTORY": "/nonexistent"}),
        cmd("record", "perf", "--status", "accepted", "--metric", "1", env={"GIT_INDEX_FILE": "/dev/null"}),
        cmd("list", env={"GIT_CEILING_DIRECTORIES": str(root)}),
        cmd("list", env={"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.bare", "GIT_CONFIG_VALUE_0": "maybe"}),
        cmd("list", env={"GIT_CONFIG_COUNT": "99999999999"}),
        cmd("list", env={"GIT_NAMESPACE": "x"}),
        cmd(
            "record",
            "perf",
            "--status",
            "accepted",
            "--metric",
            "1",
            env={"GIT_AUTHOR_NAME": "", "GIT_AUTHOR_EMAIL": "", "GIT_COMMITTER_NAME": "", "EMAIL": ""},
        ),
        cmd("list", cwd=repos.work / ".git"),
        cmd("list", cwd=repos.remote),
        cmd("list", cwd=root),
        cmd("--repo", str(repos.remote), "record", "perf", "--status", "accepted", "--metric", "1"),
    ]
    return Setup(repos.work, commands)


@case("statefile environment variables", "env")
def _statefile_env(root: Path) -> Setup:
    repos = make_repos(root)
    values = {
        "STATEFILE_MAX_BYTES": ["nan", "-1", "0", "1e999", "huge", HUGE * 10],
        "STATEFILE_DIR": ["/dev/null", "/nonexistent", str(root / "nowhere")],
        "STATEFILE_REPO": ["/dev/null", "/nonexistent", "/"],
        "STATEFILE_REPO_MEMORY": ["maybe", "1"],
        "STATEFILE_REMOTE": ["", "-oProxyCommand=x", "ext::sh -c x"],
        "STATEFILE_AUTOLOOP_JSON": ["/nonexistent", "/dev/null"],
        "TMPDIR": ["/nonexistent", "/dev/null"],
    }
    commands = []
    for name, options in values.items():
        for value in options:
            commands += [
                cmd("list", env={name: value}),
                cmd("config", env={name: value}),
                cmd("record", "perf", "--status", "accepted", "--metric", "1", env={name: value}),
                cmd("edit", "perf", env={name: value}),
            ]
    return Setup(repos.work, commands)


@case("remotes that would run a command", "env")
def _injection(root: Path) -> Setup:
    repos = make_repos(root)
    mark = root / "PWNED"
    specs = [
        f"ext::sh -c touch% {mark}",
        f"-oProxyCommand=touch {mark}",
        f"ssh://-oProxyCommand=touch%20{mark}/x",
        f"--upload-pack=touch {mark}",
        "fd::3",
        "file:///nonexistent",
        "/dev/null",
        str(root),
        f"ssh://{NOWHERE}/x",
    ]
    commands = []
    for spec in specs:
        commands += [
            cmd("--remote", spec, "list"),
            cmd("--remote", spec, "record", "perf", "--status", "accepted"),
            cmd("--remote", spec, "sync"),
        ]
    return Setup(repos.work, commands, after=lambda: [f"{mark.name} was created"] if mark.exists() else [])


# -- #13: leftovers and names that collide -------------------------------------------------------------------------


@case("leftover temporary files in a folder store", "#13")
def _leftovers(root: Path) -> Setup:
    folder = make_folder(root)
    for name in (".perf.md.abc123.tmp", ".other.md.zzzzzz.tmp", ".archive.x.tmp"):
        path = folder / name
        path.write_text("half-written\n")
        os.utime(path, (1_000_000, 1_000_000))
    commands = [
        *reads("--dir", str(folder)),
        cmd("--dir", str(folder), "record", "perf", "--status", "accepted", "--metric", "1", succeed=True),
    ]

    def after() -> list[str]:
        left = sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") and "perf" in p.name)
        return [f"temporary files left: {left}"] if left else []

    return Setup(root, commands, after=after)


NAMES = [
    "PERF",
    "Perf",
    "con",
    "CON",
    "aux",
    "nul",
    "com1",
    "LPT9",
    "perf.",
    "perf ",
    "_shared",
    ".perf",
    "perf.md",
    "a/b",
    "ĳ",
    "perf\u200b",
    "-p",
    "x" * 300,
]


@case("program names that collide or are reserved", "#13")
def _names(root: Path) -> Setup:
    repos = make_repos(root)
    folder = make_folder(root)
    commands = []
    for name in NAMES:
        commands += [
            cmd("init", name, refuse=True),
            cmd("record", name, "--create", "--status", "accepted", "--metric", "1", refuse=True),
            cmd("--dir", str(folder), "init", name, refuse=True),
        ]
    return Setup(repos.work, commands)


# -- absurd content: sizes, depths and bytes no agent writes --------------------------------------------------------


def _lines(prefix: str, count: int) -> str:
    return "\n".join(f"{prefix}{i}" for i in range(count))


both(
    "280,000 iteration headings in 7 MB, over the line limit",
    "absurd",
    lambda: {"perf.md": with_history(state(), _lines("### Iteration ", 280_000))},
)
both(
    "30,000 iteration headings, just under the line limit",
    "absurd",
    lambda: {"perf.md": with_history(state(), _lines("### Iteration ", 30_000))},
)
both("a 9 MB file, over the read limit", "absurd", lambda: {"perf.md": state() + "x" * (9 << 20)})
both("one 5 MB line", "absurd", lambda: {"perf.md": with_history(state(), "### Iteration 9 — " + "y" * (5 << 20))})
both(
    "100,000 nested blockquotes",
    "absurd",
    lambda: {
        "perf.md": state().replace("## 📚 Lessons Learned\n", "## 📚 Lessons Learned\n\n" + ">" * 100_000 + " deep\n")
    },
)
both(
    "1,000 nested list levels",
    "absurd",
    lambda: {
        "perf.md": state().replace(
            "## 📚 Lessons Learned\n",
            "## 📚 Lessons Learned\n\n" + "\n".join("  " * i + "- x" for i in range(1000)) + "\n",
        )
    },
)
both("100,000 backticks and an unclosed fence", "absurd", lambda: {"perf.md": "```\n" + "`" * 100_000 + "\n" + state()})
both(
    "NUL bytes and invalid UTF-8",
    "absurd",
    lambda: {"perf.md": state().encode() + b"\x00\x00\xff\xfe\xc3(\n", "other.md": b"\xff" * 1000},
)
both(
    "BOM, CRLF and lone CRs",
    "absurd",
    lambda: {"perf.md": "\ufeff" + state().replace("\n", "\r\n"), "other.md": state(3, "other").replace("\n", "\r")},
)
both(
    "100,000 Machine State rows",
    "absurd",
    lambda: {
        "perf.md": state().replace(
            "| Paused | false |", "| Paused | false |\n" + _lines("| Field | ", 100_000).replace("\n", " |\n") + " |"
        )
    },
)
both("20,000 history sections", "absurd", lambda: {"perf.md": state() + "\n## 📊 Iteration History\n" * 20_000})
both(
    "50,000 copies of iteration 1",
    "absurd",
    lambda: {
        "perf.md": with_history(
            state(), *(["### Iteration 1 — 2026-01-01 00:00 UTC\n\n- **Status**: ✅ Accepted"] * 50_000)
        )
    },
)
both(
    "control characters and escapes in entries",
    "absurd",
    lambda: {
        "perf.md": with_history(
            state(), "### Iteration 9 — \x1b[2J\x1b]0;title\x07 — \u202eevil\n\n- **Change**: \x1b[31mred\r\x08\x08"
        )
    },
)


def _autoloops() -> dict[str, str]:
    return {
        "huge-target": '{"selected": "perf", "selected_target_metric": 1e999}',
        "nan-target": '{"selected": "perf", "selected_target_metric": NaN}',
        "huge-issue": '{"selected": "perf", "selected_issue": ' + "9" * 40 + "}",
        "deep": '{"selected": "perf", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "long-name": json.dumps({"selected": "p" * 100_000}),
        "climbing": json.dumps({"selected": "../../etc/passwd"}),
        "not-object": "[1, 2, 3]",
        "selected-number": '{"selected": 5}',
        "programs-string": '{"selected": "perf", "issue_programs": "perf", "skipped": "x"}',
        "huge-version": '{"selected": "perf", "state_file_max_bytes": ' + "9" * 5000 + "}",
        "invalid": "{",
    }


@case("hostile autoloop.json", "absurd")
def _hostile_autoloop(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for name, text in _autoloops().items():
        path = root / f"{name}.json"
        path.write_text(text)
        commands += [
            cmd("record", "perf", "--status", "accepted", "--metric", "1", "--autoloop-json", str(path)),
            cmd("prepare", "--autoloop-json", str(path), "--out", str(root / "out")),
            cmd("report", "--out", str(path)),
        ]
    return Setup(repos.work, commands)


def _agent_outputs() -> dict[str, object]:
    item = {"type": "record_iteration", "program": "perf", "status": "accepted"}
    return {
        "huge-metric": {"items": [{**item, "metric": "1e999999999"}]},
        "nan-metric": {"items": [{**item, "metric": "nan"}]},
        "float-metric": {"items": [{**item, "metric": 1e308 * 10}]},
        "long-program": {"items": [{**item, "program": "p" * 100_000}]},
        "climbing": {"items": [{**item, "program": "../x"}]},
        "huge-pr": {"items": [{**item, "pr": 10**40, "issue": -1, "ci_fix_attempts": 10**40}]},
        "megabyte-lesson": {"items": [{**item, "lesson": "l" * 1_000_000}]},
        "many-items": {"items": [{**item, "metric": i} for i in range(300)]},
        "items-not-objects": {"items": [1, "x", None]},
        "wrong-types": {"items": [{**item, "metric": [1], "change": {"a": 1}, "lessons": 5, "status": 7}]},
        "deep": '{"items": [' + "[" * 100_000 + "]" * 100_000 + "]}",
    }


@case("hostile agent output", "absurd")
def _hostile_agent_output(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for name, data in _agent_outputs().items():
        path = root / f"{name}.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        commands += [cmd("apply", "--agent-output", str(path), "--dry-run"), cmd("apply", "--agent-output", str(path))]
    return Setup(repos.work, commands)


def _tomls() -> dict[str, bytes]:
    return {
        "inf-budget": b"max-bytes = inf\n",
        "huge-budget": b"max-bytes = " + b"9" * 30 + b"\n",
        "negative": b"max-bytes = -1\nkeep-recent = -5\n",
        "nan-threshold": b"aggressive-at = nan\n",
        "huge-keep": b"keep-recent = 99999999999999999999\naggressive-keep = 10000000000\n",
        "huge-timeout": b"summarizer-timeout = 1e308\n",
        "wrong-types": b'max-bytes = "lots"\nbranch = 5\nremote = [1]\n',
        "deep-keys": b"[" + b".".join([b"a"] * 5000) + b"]\nx = 1\n",
        "invalid": b"max-bytes = = 1\n",
        "not-utf8": b"branch = '\xff'\n",
        "branch-head": b'branch = "HEAD"\n',
        "megabyte-string": b'branch = "' + b"b" * 1_000_000 + b'"\n',
        "unknown-key": b"max_bites = 1\n",
    }


@case("hostile .statefile.toml", "absurd")
def _hostile_toml(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for name, data in _tomls().items():
        where = root / name
        git("worktree", "add", "--quiet", "--detach", str(where), cwd=repos.work)
        (where / ".statefile.toml").write_bytes(data)
        commands += [
            cmd("config", cwd=where),
            cmd("list", cwd=where),
            cmd("compact", "--all", cwd=where),
            cmd("record", "perf", "--status", "accepted", "--metric", "1", cwd=where),
        ]
    return Setup(repos.work, commands)


def _frontmatters() -> dict[str, str]:
    laughs = "\n".join(
        [f"a0: &a0 [{', '.join(['lol'] * 9)}]"]
        + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    )
    return {
        "billion-laughs": f"---\n{laughs}\ntools:\n  repo-memory: *a9\n---\nbody\n",
        "deep": "---\ntools:\n  repo-memory: " + "[" * 10_000 + "]" * 10_000 + "\n---\n",
        "huge-size": "---\ntools:\n  repo-memory:\n    max-file-size: 1e999\n    max-patch-size: -1\n---\n",
        "string": "---\ntools:\n  repo-memory: yes please\n---\n",
        "list-of-junk": "---\ntools:\n  repo-memory: [1, 2, {id: '../../x'}]\n---\n",
        "long-id": "---\ntools:\n  repo-memory:\n    - id: " + "i" * 100_000 + "\n---\n",
        "python-tag": "---\ntools: !!python/object/apply:os.system ['touch PWNED']\n---\n",
        "unclosed": "---\ntools:\n  repo-memory: [\n",
    }


@case("hostile workflow frontmatter", "absurd")
def _hostile_frontmatter(root: Path) -> Setup:
    repos = make_repos(root)
    commands = []
    for name, text in _frontmatters().items():
        where = root / name
        git("worktree", "add", "--quiet", "--detach", str(where), cwd=repos.work)
        (where / ".github" / "workflows").mkdir(parents=True)
        (where / ".github" / "workflows" / "autoloop.md").write_text(text)
        commands += [
            cmd("config", cwd=where),
            cmd("--repo-memory", "config", cwd=where),
            cmd("--repo-memory", "list", cwd=where),
            cmd("list", cwd=where),
        ]
    return Setup(repos.work, commands, after=lambda: ["PWNED was created"] if list(root.rglob("PWNED")) else [])


SUMMARIZERS = {
    "sleeps": "sleep 100",
    "forks a child that keeps its output open": "sh -c 'sleep 100 & echo done'",
    "prints 100 MB": f"{shlex.quote(sys.executable)} -c 'import sys; sys.stdout.write(\"x\" * 100_000_000)'",
    "prints invalid UTF-8": "printf '\\377\\376\\n'",
    "fails": "false",
    "does not exist": "/nonexistent/summarizer",
    "unbalanced quote": "'oops",
}


@case("summarizers that misbehave", "absurd")
def _summarizers(root: Path) -> Setup:
    repos = make_repos(root)
    put_branch(repos.work, {"perf.md": state(40)})
    commands = []
    for command in SUMMARIZERS.values():
        commands += [
            cmd("compact", "perf", "--aggressive", "--max-bytes", "4000", "--summarizer", command),
            cmd("compact", "perf", "--aggressive", "--max-bytes", "4000", "--dry-run", "--summarizer", command),
        ]
    (repos.work / ".statefile.toml").write_text("summarizer-timeout = 2\n")
    return Setup(repos.work, commands)


def chosen(names: Sequence[str] | None = None, ci: bool = False) -> list[Case]:
    """The cases whose names contain any of ``names`` (all when None), only the CI ones with ``ci``."""
    return [c for c in CASES if (not ci or c.ci) and (names is None or any(n in c.name for n in names))]
