"""Safe outputs from the agent's tool call to ``$GH_AW_AGENT_OUTPUT``, re-stated (gh-aw v0.65.6).

- :func:`call_tool`: the safe-outputs MCP server's default handler and append (``safe_outputs_handlers.cjs``
  lines 35-85, ``safe_outputs_append.cjs``): the call's arguments plus ``type`` (the tool name, ``-`` → ``_``) as
  one compact JSON line; a string field over 64,000 characters is replaced by a "saved to file" note whose file
  never reaches later jobs.
- :func:`ingest`: "Ingest agent output" (``collect_ndjson_output.cjs``): each line parsed; unknown types
  rejected; **at most ``max`` items per custom-job type** (the job's own ``max:``, which newer compilers write
  into the config — ``safe_jobs.go`` — and 1 when it has none, ghaw-spec §3.5); each declared input validated by
  its type (``string`` values sanitised, ``number`` and ``boolean`` must already be JSON numbers/booleans,
  ``choice`` one of the options; a required input missing is an error); an item with any error is dropped whole
  and the error listed.  A field the job does not declare is passed on as the agent wrote it, unsanitised
  (``validateItemWithSafeJobConfig`` only touches declared inputs).  Writes ``{"items": …, "errors": …}``.
- :func:`sanitize`: ``sanitizeContentCore`` (``sanitize_content_core.cjs`` v0.65.6 lines 990-1065), the steps
  that matter for statefile's fields: NFC, entity decoding, invisible and bidi characters removed, full-width ASCII
  mapped, ANSI/control characters removed, ``@mentions`` wrapped in backticks, HTML comments removed, tags outside
  a small allow-list turned into ``(tag)``, non-https URLs and https URLs off the allow-list replaced by
  ``(host/redacted)``, template delimiters escaped, and the result trimmed.  As in gh-aw (checked against
  github/gh-aw-actions ``setup/js/sanitize_content_core.cjs`` at ``ff0525b``), comment removal (with nesting
  depth), tag conversion and template escaping skip code regions (fenced blocks, inline code spans): an HTML
  comment written inside backticks reaches the custom job as it was written.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_ALLOWED_DOMAINS = ("github.com", "github.io", "githubusercontent.com", "githubassets.com", "github.dev",
                           "codespaces.new")  # fmt: skip
_TOKEN_LIMIT = 16000
_ALLOWED_TAGS = {"b", "blockquote", "br", "code", "details", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
                 "li", "ol", "p", "pre", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead",
                 "tr", "ul"}  # fmt: skip


def call_tool(jsonl: Path, tool: str, arguments: dict[str, Any], *, large_dir: Path | None = None) -> None:
    """The agent calls ``tool`` with ``arguments``: one line appended to the safe-outputs JSONL."""
    entry: dict[str, Any] = {**arguments, "type": tool}
    for key, value in list(entry.items()):
        if isinstance(value, str) and -(-len(value) // 4) > _TOKEN_LIMIT:
            entry[key] = "[Content too large, saved to file: omitted.json]"  # the file is not in any artifact
    entry["type"] = str(entry["type"]).replace("-", "_")
    with jsonl.open("a", encoding="utf-8") as fh:
        fh.write(stringify(entry) + "\n")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def stringify(data: Any) -> str:
    """``JSON.stringify(data)``: compact, non-ASCII characters as they are, and a lone surrogate (which a tool call's
    JSON may carry as an escape) written as its ``\\uXXXX`` escape, as a well-formed ``JSON.stringify`` does (ES2019),
    so the text is valid UTF-8."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _domain_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    host = host.split(":")[0].lower()
    for domain in allowed:
        d = domain.lower()
        if host == d or (d.startswith("*.") and (host.endswith(d[1:]) or host == d[2:])) or host.endswith("." + d):
            return True
    return False


def _clean_domain(host: str) -> str:
    parts = [re.sub(r"[^a-zA-Z0-9]", "", p) for p in host.split(".")]
    joined = ".".join(p for p in parts if p)
    return joined[:24] + "…" + joined[-24:] if len(joined) > 48 else joined


def sanitize(
    text: str, *, allowed_domains: tuple[str, ...] = DEFAULT_ALLOWED_DOMAINS, command: str | None = None
) -> str:
    """What a ``string`` input of a custom safe-output job looks like after ingestion."""
    s = unicodedata.normalize("NFC", text)
    s = html.unescape(s)
    s = re.sub("[\u00ad\u034f\u200b-\u200f\u2060\ufeff\u202a-\u202e\u2066-\u2069]", "", s)
    s = re.sub("[\uff01-\uff5e]", lambda m: chr(ord(m.group(0)) - 0xFEE0), s)
    s = re.sub(r"\x1b\[[0-9;]*[mGKH]", "", s)
    s = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", s)
    if command:
        s = re.sub(rf"^(\s*)/({re.escape(command)})\b", r"\1`/\2`", s, flags=re.I)
    s = outside_code(s, _remove_comments)  # before mentions: a mention's backticks would split a comment
    s = re.sub(r"(^|[^A-Za-z0-9`])@([A-Za-z0-9](?:[A-Za-z0-9_-]{0,37}[A-Za-z0-9])?(?:/[A-Za-z0-9._-]+)?)",
               r"\1`@\2`", s)  # fmt: skip
    s = outside_code(s, lambda t: re.sub(
        r"</?([A-Za-z][A-Za-z0-9-]*)([^>]*)>",
        lambda m: m.group(0) if m.group(1).lower() in _ALLOWED_TAGS else f"({m.group(0)[1:-1]})", t))  # fmt: skip

    def redact_protocol(m: re.Match[str]) -> str:
        domain = m.group(2)
        if domain:
            cleaned = _clean_domain(domain.lower())
            return f"({cleaned}/redacted)" if cleaned else "(redacted)"
        return "(redacted)"

    s = re.sub(r"((?:http|ftp|file|ssh|git)://([\w.-]*)(?:[^\s]*)|(?:data|javascript|vbscript|about|mailto|tel):[^\s]+)",
               redact_protocol, s, flags=re.I)  # fmt: skip

    def redact_https(m: re.Match[str], prefix: str = "") -> str:
        host = m.group("host")
        if _domain_allowed(host, allowed_domains):
            return m.group(0)
        cleaned = _clean_domain(host.split(":")[0].lower())
        return prefix + (f"({cleaned}/redacted)" if cleaned else "(redacted)")

    s = re.sub(r"https://(?P<host>[\w.-]+(?::\d+)?)(/(?:(?!https://)[^\s,])*)?", redact_https, s, flags=re.I)
    s = re.sub(r"(?P<pre>^|[\s(\[{\"'])//(?P<host>[\w.-]+(?::\d+)?)(/(?:(?!//)[^\s,])*)?",
               lambda m: redact_https(m, m.group("pre")), s)  # fmt: skip
    s = outside_code(s, _escape_templates)
    return s.strip()


def _escape_templates(text: str) -> str:
    for delimiter, escaped in (("{{", "\\{\\{"), ("<%=", "\\<%="), ("${", "\\$\\{"), ("{#", "\\{\\#"),
                               ("{%", "\\{\\%")):  # fmt: skip
        text = text.replace(delimiter, escaped)
    return text


def _remove_comments(text: str) -> str:
    """``<!-- … -->`` (and ``--!>``) removed with nesting depth: ``<!-- <!-- --> x -->`` leaves nothing."""
    out: list[str] = []
    depth = i = 0
    while i < len(text):
        if text.startswith("<!--", i):
            depth, i = depth + 1, i + 4
        elif depth and text.startswith("--!>", i):
            depth, i = depth - 1, i + 4
        elif depth and text.startswith("-->", i):
            depth, i = depth - 1, i + 3
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    """Fenced code blocks: from a line starting with 3+ backticks or tildes to the closing fence (or the end)."""
    ranges: list[tuple[int, int]] = []
    pos, start, fence = 0, -1, ""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        end = pos + len(line) + (1 if index < len(lines) - 1 else 0)
        stripped = line.strip()
        if not fence:
            match = re.match(r"^(`{3,}|~{3,})", stripped)
            if match:
                start, fence = pos, match.group(1)
        elif re.fullmatch(rf"{re.escape(fence[0])}{{{len(fence)},}}\s*", stripped):
            ranges.append((start, end))
            fence = ""
        pos = end
    if fence:
        ranges.append((start, len(text)))
    return ranges


def _outside_inline_code(text: str, fn: Callable[[str], str]) -> str:
    """``fn`` applied to the text between inline code spans (a run of N backticks closed by exactly N)."""
    parts: list[str] = []
    i = done = 0
    while i < len(text):
        if text[i] != "`":
            i += 1
            continue
        opening = i
        while i < len(text) and text[i] == "`":
            i += 1
        count, j, close = i - opening, i, -1
        while j < len(text):
            if text[j] != "`":
                j += 1
                continue
            run = j
            while j < len(text) and text[j] == "`":
                j += 1
            if j - run == count:
                close = run
                break
        if close >= 0:
            if done < opening:
                parts.append(fn(text[done:opening]))
            parts.append(text[opening : close + count])
            done = i = close + count
    if done < len(text):
        parts.append(fn(text[done:]))
    return "".join(parts)


def outside_code(text: str, fn: Callable[[str], str]) -> str:
    """``applyToNonCodeRegions``: ``fn`` applied outside fenced code blocks and inline code spans, which stay as
    they are (so an HTML comment inside backticks survives ingestion, as it does in gh-aw)."""
    parts: list[str] = []
    pos = 0
    for start, end in _fenced_ranges(text):
        if pos < start:
            parts.append(_outside_inline_code(text[pos:start], fn))
        parts.append(text[start:end])
        pos = end
    if pos < len(text) or not parts:
        parts.append(_outside_inline_code(text[pos:], fn))
    return "".join(parts)


def _validate(item: dict[str, Any], inputs: dict[str, Any], line: int, allowed: tuple[str, ...]) -> list[str]:
    errors: list[str] = []
    for name, schema in inputs.items():
        value = item.get(name)
        if schema.get("required") and value is None:
            errors.append(f"Line {line}: {name} is required")
            continue
        if value is None:
            default = schema.get("default")
            if default:  # falsy defaults are dropped
                item[name] = default
            continue
        kind = schema.get("type", "string")
        if kind == "string":
            if not isinstance(value, str):
                errors.append(f"Line {line}: {name} must be a string")
            else:
                item[name] = sanitize(value, allowed_domains=allowed)
        elif kind == "boolean" and not isinstance(value, bool):
            errors.append(f"Line {line}: {name} must be a boolean")
        elif kind == "number" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            errors.append(f"Line {line}: {name} must be a number")
        elif kind == "choice":
            if not isinstance(value, str):
                errors.append(f"Line {line}: {name} must be a string for choice type")
            elif value not in schema.get("options", []):
                errors.append(f"Line {line}: {name} must be one of: {', '.join(schema.get('options', []))}")
            else:
                item[name] = sanitize(value, allowed_domains=allowed)
    return errors


def ingest(jsonl: Path, output: Path, config: dict[str, dict[str, Any]],
           *, allowed_domains: tuple[str, ...] = DEFAULT_ALLOWED_DOMAINS) -> dict[str, Any]:  # fmt: skip
    """Validate the JSONL against ``config`` (type → ``{"inputs": …, "max"?: n}``) and write the agent output."""
    expected = {key.replace("-", "_"): value for key, value in config.items()}
    items: list[dict[str, Any]] = []
    errors: list[str] = []
    counts: dict[str, int] = {}
    lines = jsonl.read_text(encoding="utf-8").split("\n") if jsonl.is_file() else []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"Line {number}: Invalid JSON - {exc.msg}")
            continue
        if "type" not in item:
            errors.append(f"Line {number}: Missing required 'type' field")
            continue
        kind = str(item["type"]).replace("-", "_")
        item["type"] = kind
        if kind not in expected:
            errors.append(f"Line {number}: Unexpected output type '{kind}'. Expected one of: {', '.join(expected)}")
            continue
        limit = expected[kind].get("max") or 1
        if counts.get(kind, 0) >= limit:
            errors.append(f"Line {number}: Too many items of type '{kind}'. Maximum allowed: {limit}.")
            continue
        problems = _validate(item, expected[kind].get("inputs", {}), number, allowed_domains)
        if problems:
            errors.extend(problems)
            continue
        counts[kind] = counts.get(kind, 0) + 1
        items.append(item)
    data = {"items": items, "errors": errors}
    output.write_text(stringify(data), encoding="utf-8")
    return data
