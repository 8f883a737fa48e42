"""gh-aw's mcp-scripts tools, as its compiler lays them out and its HTTP MCP server serves them to the agent.

A re-statement (Python, like the other modules here; read from gh-aw-actions v0.72.0's ``setup/js/`` and gh-aw's
``pkg/workflow/mcp_scripts_generator.go``, not copied).  No npm package ships gh-aw-actions' ``setup/js`` and the
tests cannot reach GitHub, so the server cannot be fetched at test time; a Python re-statement also runs where
node is missing, which the other re-statements of gh-aw's jobs already assume.

- **The compiler** (:func:`compile_tools`): ``tools.json`` — ``{"serverName": "mcpscripts", "version", "logDir",
  "tools": [...]}``, tools sorted by name, each ``{"name"`` (the frontmatter key as written), ``"description"``,
  ``"inputSchema": {"type": "object", "properties": {input: {"type", "description"[, "default"]}},
  "required": [sorted names]}``, ``"handler": "<name>.sh"`` for a ``run:`` tool, ``"timeout"`` when set``}`` —
  and one handler per tool: ``#!/bin/bash``, a comment with the name and description, ``set +o histexpand``,
  ``set -euo pipefail``, then the ``run:`` script as written.
- **The server** (:class:`McpScriptsServer`; ``mcp_scripts_mcp_server_http.cjs`` in stateless mode, as the
  compiled entry point starts it, with ``mcp_http_transport.cjs``, ``mcp_server_core.cjs``,
  ``mcp_handler_shell.cjs`` and ``mcp_handler_process.cjs``): it loads ``tools.json`` (handler paths resolved
  inside its folder; one that escapes it is skipped) and deletes it; a tool's name is registered with ``-`` → ``_``
  and lower-cased.  ``GET /health`` answers ``{"status": "ok", …}``; ``POST`` takes one JSON-RPC 2.0 request:
  invalid JSON → 400 / -32700, an empty body or a ``jsonrpc`` other than ``"2.0"`` → 400 / -32600, a request
  without ``id`` (a notification) → 204.  ``initialize`` echoes the client's ``protocolVersion`` (default
  ``2024-11-05``) with ``serverInfo`` and ``capabilities.tools``; ``ping``; ``tools/list`` lists name,
  description and inputSchema; ``tools/call`` fails with -32602 for a name that is not a string, an unknown tool
  or a missing required input, else runs the handler and answers ``{"content": [...], "isError": false}``.
- **A shell handler**: the script runs directly (execFile: its shebang, no shell around it) in
  ``$GITHUB_WORKSPACE`` (else the server's directory) with the server's environment plus each argument as
  ``INPUT_<NAME>`` (upper case, ``-`` → ``_``; the value as JavaScript's ``String()`` spells it) and
  ``GITHUB_OUTPUT`` (a fresh empty file, read back as ``key=value`` lines), killed after the tool's ``timeout``
  (default 60 s).  Exit 0: one text content, ``JSON.stringify({stdout, stderr, outputs})``.  Otherwise a JSON-RPC
  error -32603 whose message is ``Command failed: <script> (exit code: N)`` (or ``(signal: SIGTERM)``) followed
  by ``stderr:`` and ``stdout:`` blocks when they are not blank.  Output past 10 MB fails the call (``maxBuffer``).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SERVER_NAME = "mcpscripts"
VERSION = "1.0.0"
DEFAULT_TIMEOUT = 60
MAX_BUFFER = 10 * 1024 * 1024


def compile_tools(tools: dict[str, dict[str, Any]], folder: Path, path_map: dict[str, str] | None = None) -> Path:
    """Write ``tools.json`` and one handler per ``run:`` tool into ``folder``; the config's path.

    ``path_map`` rewrites fixed runner paths in the scripts (``/tmp/gh-aw`` → the test run's folder), the one
    change made to a shipped script, as :func:`ghaw.component.run_steps` does for steps.
    """
    folder.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"serverName": SERVER_NAME, "version": VERSION, "logDir": str(folder / "logs"),
                              "tools": []}  # fmt: skip
    for name in sorted(tools):
        tool = tools[name]
        assert "run" in tool, f"{name}: the re-statement compiles run: tools only"
        properties: dict[str, Any] = {}
        required = []
        for input_name in sorted(tool.get("inputs") or {}):
            spec = tool["inputs"][input_name]
            properties[input_name] = {"type": spec.get("type"), "description": spec.get("description")}
            if "default" in spec:
                properties[input_name]["default"] = spec["default"]
            if spec.get("required"):
                required.append(input_name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = sorted(required)
        entry: dict[str, Any] = {"name": name, "description": tool["description"], "inputSchema": schema,
                                 "handler": f"{name}.sh"}  # fmt: skip
        if tool.get("timeout"):
            entry["timeout"] = int(tool["timeout"])
        config["tools"].append(entry)
        script = str(tool["run"])
        for old, new in (path_map or {}).items():
            script = script.replace(old, new)
        comment = "\n".join("# " + line for line in str(tool["description"]).rstrip("\n").split("\n"))
        handler = folder / f"{name}.sh"
        handler.write_text(f"#!/bin/bash\n# Auto-generated mcp-script tool: {name}\n{comment}\n\n"
                           f"set +o histexpand\nset -euo pipefail\n\n{script}\n")  # fmt: skip
        handler.chmod(0o755)
    path = folder / "tools.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def js_string(value: Any) -> str:
    """``String(value)`` in JavaScript, for a value decoded from JSON (how an argument becomes ``INPUT_*``)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII as it is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Failure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class McpScriptsServer:
    """The mcp-scripts HTTP server on ``127.0.0.1`` (a free port), in a thread; use as a context manager."""

    def __init__(self, config_path: Path, *, env: dict[str, str]) -> None:
        config = json.loads(config_path.read_text())
        base = config_path.parent.resolve()
        self.env = env
        self.info = {"name": config.get("serverName") or SERVER_NAME, "version": config.get("version") or VERSION}
        self.tools: dict[str, dict[str, Any]] = {}
        for tool in config["tools"]:
            handler = (base / tool["handler"]).resolve()
            if base not in handler.parents or not handler.is_file():
                continue  # escapes the folder, or missing: not loaded
            name = tool["name"].replace("-", "_").lower()
            self.tools[name] = {**tool, "name": name, "handler": handler}
        config_path.unlink()  # cleanupConfigFile: no configuration left on disk
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any | None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._send(200, {"status": "ok", "server": server.info["name"], "version": server.info["version"],
                                     "tools": len(server.tools)})  # fmt: skip
                else:
                    self._send(405, {"error": "Method not allowed"})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    self._send(400, {"jsonrpc": "2.0", "error": {"code": -32700, "message":
                               "Parse error: Invalid JSON in request body"}, "id": None})  # fmt: skip
                    return
                if not body:
                    self._send(400, {"jsonrpc": "2.0", "error": {"code": -32600, "message":
                               "Invalid Request: Empty request body"}, "id": None})  # fmt: skip
                    return
                if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
                    self._send(400, {"jsonrpc": "2.0", "error": {"code": -32600, "message":
                               "Invalid Request: jsonrpc must be '2.0'"}, "id": None})  # fmt: skip
                    return
                response = server.handle(body)
                self._send(204, None) if response is None else self._send(200, response)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> McpScriptsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()

    def handle(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """``handleRequest`` of ``mcp_server_core.cjs``: the JSON-RPC response, or ``None`` for a notification."""
        if "id" not in request:
            return None
        method, params, ident = request.get("method"), request.get("params") or {}, request["id"]
        try:
            if method == "initialize":
                result: Any = {"protocolVersion": params.get("protocolVersion") or "2024-11-05",
                               "serverInfo": self.info, "capabilities": {"tools": {}}}  # fmt: skip
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": [{"name": t["name"], "description": t["description"],
                                     "inputSchema": t["inputSchema"]} for t in self.tools.values()]}  # fmt: skip
            elif method == "tools/call":
                result = self._call(params)
            elif isinstance(method, str) and method.startswith("notifications/"):
                return None
            else:
                raise _Failure(-32601, f"Method not found: {method}")
        except _Failure as failure:
            return {"jsonrpc": "2.0", "id": ident, "error": {"code": failure.code, "message": failure.message}}
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(name, str) or not name:
            raise _Failure(-32602, "Invalid params: 'name' must be a string")
        tool = self.tools.get(name.replace("-", "_").lower())
        if tool is None:
            raise _Failure(-32602, f"Tool '{name}' not found")
        # validateRequiredFields: absent, null, or a string that is blank once trimmed.
        missing = [
            r
            for r in tool["inputSchema"].get("required", [])
            if arguments.get(r) is None or (isinstance(arguments[r], str) and not arguments[r].strip())
        ]
        if missing:
            raise _Failure(-32602, f"Invalid arguments: missing or empty {', '.join(repr(m) for m in missing)}")
        return {"content": self._run_shell(tool, arguments), "isError": False}

    def _run_shell(self, tool: dict[str, Any], arguments: dict[str, Any]) -> list[dict[str, str]]:
        env = dict(self.env)
        for key, value in arguments.items():
            env[f"INPUT_{key.upper().replace('-', '_')}"] = js_string(value)
        with tempfile.NamedTemporaryFile("w", prefix="mcp-shell-output-", suffix=".txt", delete=False) as out:
            env["GITHUB_OUTPUT"] = out.name
        script = str(tool["handler"])
        timeout = tool.get("timeout") or DEFAULT_TIMEOUT
        try:
            proc = subprocess.Popen([script], env=env, cwd=env.get("GITHUB_WORKSPACE") or os.getcwd(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
            try:
                stdout_b, stderr_b = proc.communicate(timeout=timeout)
                failure = f"(exit code: {proc.returncode})" if proc.returncode else None
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGTERM)
                stdout_b, stderr_b = proc.communicate()
                failure = "(signal: SIGTERM)"
            stdout, stderr = stdout_b.decode("utf-8", "replace"), stderr_b.decode("utf-8", "replace")
            if failure is None and max(len(stdout_b), len(stderr_b)) > MAX_BUFFER:
                failure = "— stdout maxBuffer length exceeded"
            if failure is not None:
                parts = [f"Command failed: {script} {failure}"]
                if stderr.strip():
                    parts.append(f"stderr:\n{stderr.strip()}")
                if stdout.strip():
                    parts.append(f"stdout:\n{stdout.strip()}")
                raise _Failure(-32603, "\n".join(parts))
            outputs = {}
            for line in Path(out.name).read_text().split("\n"):
                line = line.strip()
                if "=" in line:
                    key, _, value = line.partition("=")
                    outputs[key] = value
        finally:
            Path(out.name).unlink(missing_ok=True)
        return [{"type": "text", "text": js_json({"stdout": stdout, "stderr": stderr, "outputs": outputs})}]


class McpClient:
    """An MCP client over HTTP, the agent's side: JSON-RPC requests, one per POST."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.next_id = 0

    def post(self, body: Any) -> tuple[int, Any]:
        """POST ``body`` (JSON): the status and the decoded answer (``None`` when empty)."""
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream"})  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                data = response.read()
                return response.status, json.loads(data) if data else None
        except urllib.error.HTTPError as error:
            data = error.read()
            return error.code, json.loads(data) if data else None

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request: the whole JSON-RPC response (``result`` or ``error``)."""
        self.next_id += 1
        status, answer = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        assert status == 200 and isinstance(answer, dict) and answer.get("id") == self.next_id, (status, answer)
        return answer

    def start(self) -> dict[str, Any]:
        """``initialize`` then the ``notifications/initialized`` notification (answered with 204): the handshake."""
        answer = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "agent", "version": "1"}})  # fmt: skip
        status, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 204, status
        return answer

    def call(self, tool: str, **arguments: Any) -> tuple[str | None, str]:
        """``tools/call``: ``(stdout, "")`` of a tool that ran, or ``(None, error message)``."""
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        if "error" in answer:
            return None, str(answer["error"]["message"])
        result = answer["result"]
        assert result["isError"] is False and len(result["content"]) == 1, result
        payload = json.loads(result["content"][0]["text"])
        return str(payload["stdout"]), str(payload["stderr"])
