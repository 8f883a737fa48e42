# ruff: noqa: E501
"""Regenerate the generated part of the fixture corpus in ``tests/data/corpus/``.

Most fixtures there are hand-written markdown; the files this script writes are the ones that are long (sizes near
or over the 30,720-byte budget, built from repeated entry shapes) or that need exact bytes an editor would change
(a BOM, CRLF line endings, no final newline, undecodable bytes).  Everything is invented and deterministic: the same
script always writes the same bytes.  ``tests/data/.gitattributes`` keeps git from touching line endings.

    python tests/data/make_corpus.py          # rewrite the generated fixtures
    python tests/data/make_corpus.py --check  # exit 1 if any generated fixture differs from what is on disk

See ``tests/data/MANIFEST.md`` for which quirk each fixture reproduces.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

from statefile.model.machine_state import CANONICAL_ROWS, NONE_VALUE
from statefile.model.template import BANNER, FORECLOSED_INTRO, LESSONS_INTRO, NO_PRIORITIES, SECTION_KINDS
from statefile.model.template import HISTORY_INTRO as INTRO
from statefile.model.template import MACHINE_STATE_NOTE as NOTE

OUT = Path(__file__).resolve().parent / "corpus"
# Older files carry the banner without its second sentence.
SHORT_BANNER = "🤖 *This file is maintained by the Autoloop agent.*"

FIXTURES: dict[str, Callable[[], bytes]] = {}


def fixture(name: str) -> Callable[[Callable[[], bytes]], Callable[[], bytes]]:
    def register(build: Callable[[], bytes]) -> Callable[[], bytes]:
        FIXTURES[name] = build
        return build

    return register


# -- the pieces every file is built from ----------------------------------------------------------------------------
# Each builds what the template writes; a fixture's quirks are the places where it calls them differently (or not).


def title(program: str, banner: str = BANNER) -> list[str]:
    """The ``# Autoloop:`` title and the banner, each followed by a blank line."""
    return [f"# Autoloop: {program}", "", banner, ""]


def section(kind: str, *body: str, rule: bool = True, gap: bool = True, heading: str | None = None) -> list[str]:
    """A section as the template lays it out: ``---``, blank, the kind's heading, blank, the body, blank.

    ``rule=False`` leaves out the ``---`` and its blank line, ``gap=False`` the blank line after the heading;
    ``heading`` replaces the template's heading."""
    return [*(["---", ""] if rule else []), heading or SECTION_KINDS[kind][0], *([""] if gap else []), *body, ""]


def table(rows: list[tuple[str, str]]) -> list[str]:
    return ["| Field | Value |", "|-------|-------|", *[f"| {k} | {v} |" for k, v in rows]]


def machine_state(rows: list[tuple[str, str]], note: bool = True) -> list[str]:
    """The ⚙️ Machine State section: the template's note and a blank line (unless ``note`` is false), the table."""
    return section("machine_state", *([NOTE, ""] if note else []), *table(rows))


def upstream_rows(
    program: str,
    *,
    last_run: str,
    iterations: str,
    best: str,
    target: str,
    direction: str,
    pr: str,
    issue: str,
    errors: str,
    statuses: str,
) -> list[tuple[str, str]]:
    """The template's rows in its order, for a program that is neither paused nor completed."""
    branch = f"`autoloop/{program}`"
    values = [last_run, iterations, best, target, direction, branch, pr, issue]
    values += ["false", NONE_VALUE, "false", NONE_VALUE, errors, statuses]  # Paused … Recent Statuses
    return list(zip(CANONICAL_ROWS, values, strict=True))


def program_info(
    program: str, goal: str, metric: str, *links: tuple[str, str], end: str = "", rule: bool = True
) -> list[str]:
    """📋 Program Info: Goal, Metric, the Branch link, then ``links`` as (label, value); each line ends with ``end``."""
    branch = f"[`autoloop/{program}`](../../tree/autoloop/{program})"
    lines = [("Goal", goal), ("Metric", metric), ("Branch", branch), *links]
    return section("program_info", *[f"**{label}**: {value}{end}" for label, value in lines], rule=rule)


def upstream_head(
    program: str, goal: str, metric: str, rows: list[tuple[str, str]], hard_breaks: bool = False
) -> list[str]:
    """Title, banner, Machine State with the note, and Program Info naming the rows' PR and Issue, as the template
    writes them.  ``hard_breaks`` ends every Program Info line with two spaces."""
    cells = dict(rows)
    metric_line = f"{metric} ({cells['Metric Direction']} is better)"
    links = [("Pull Request", cells["PR"]), ("Issue", cells["Issue"])]
    end = "  " if hard_breaks else ""
    return [*title(program), *machine_state(rows), *program_info(program, goal, metric_line, *links, end=end)]


def run_heading(n: int, stamp: str, run: str) -> str:
    return f"### Iteration {n} — {stamp} UTC — [Run]({run})"


def bullets(*fields: tuple[str, str | None]) -> list[str]:
    """An entry's body: ``- **Label**: value`` for each field whose value is not None."""
    return [f"- **{label}**: {value}" for label, value in fields if value is not None]


def block(*lines: str) -> str:
    """Lines as one history entry, ending with a newline."""
    return "\n".join(lines) + "\n"


def document(lines: list[str], entries: list[str]) -> str:
    """The file: its lines (the last one blank), then the history entries with a blank line between them."""
    return "\n".join(lines) + "\n" + "\n".join(entries)


def trailing_errors(statuses: list[str]) -> int:
    """Consecutive Errors: how many of the newest statuses are errors."""
    errors = 0
    for status in reversed(statuses):
        if status != "error":
            break
        errors += 1
    return errors


def sha(rng: random.Random, n: int = 7) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def when(day: int, minute: int, month: str = "2026-03") -> str:
    """A 'YYYY-MM-DD HH:MM' stamp: ``day`` of ``month``, ``minute`` minutes after midnight."""
    return f"{month}-{day:02d} {minute // 60 % 24:02d}:{minute % 60:02d}"


def pick(rng: random.Random, items: list[str], k: int) -> list[str]:
    return rng.sample(items, k)


# -- headless-entries-near-budget.md ------------------------------------------------------------------------------
# Push failures for 18 runs in a row; four entries lost their headings (their bullets sit under the entry above);
# a range whose body bullets start with "Iters …"/"Iter …"; a long Pause Reason; duplicated lessons; ~87% of budget.


@fixture("headless-entries-near-budget.md")
def headless_entries_near_budget() -> bytes:
    rng = random.Random(104)
    url = "https://github.com/example-org/qbuild/actions/runs/{}"
    features = [
        (
            "window_frames.ts",
            "`windowFrame`/`rowsBetween`/`rangeBetween`/`groupsBetween`",
            "ROWS, RANGE and GROUPS frames with EXCLUDE options",
        ),
        (
            "cte_builder.ts",
            "`withCte`/`withRecursive`/`materialized`",
            "recursive and materialised common table expressions",
        ),
        (
            "upsert.ts",
            "`onConflict`/`doUpdate`/`doNothing`/`excluded`",
            "dialect-specific upserts for the three supported databases",
        ),
        (
            "json_path.ts",
            "`jsonGet`/`jsonPath`/`jsonContains`/`jsonSet`",
            "JSON path operators with per-dialect rendering",
        ),
    ]
    blockers = [
        'the push tool call failed with "Tool does not exist"',
        "the safe-output server was filtered by the MCP registry check (401)",
        "create_pull_request and the push tool were both missing from the tool list",
    ]
    entries: list[str] = []
    headless = {119, 116, 112, 108}
    minute = 18 * 60 + 40
    for n in range(121, 103, -1):
        consecutive = n - 103
        feature = features[(121 - n) // 5 % len(features)]
        tests = rng.randint(18, 46)
        commit = sha(rng)
        minute -= rng.randint(24, 71)
        stamp = when(14 if minute > 0 else 13, minute % (24 * 60), "2026-05")
        run = url.format(72_000_000_000 + n * 1_237_911 + rng.randint(0, 999))
        body = [
            f"- **Status**: ⚠️ Error (could not push — {rng.choice(['safe-output server blocked', 'safe-output tools unavailable', 'safe-output server filtered by policy'])}, {ordinal(consecutive)} consecutive)",
            f"- **Change**: Add `{feature[0]}` — {feature[1]}: {feature[2]}. {tests} unit + {rng.randint(2, 4)} property-based tests. {rng.choice(['Example page added.', 'Example page with 5 queries.', 'Docs page updated.', 'No new example page.'])} Branch set up from 5d1e0a7 (params + where_builder) — earlier local commits from iters {n - 3}-{n - 1} were lost (never pushed).",
            f"- **Metric**: {58 if n > 110 else 57} ({rng.choice(['baseline 57 from the canonical branch, +1', 'main baseline 56, delta +2 if pushed', 'previous best: 57 local, +1 if pushed'])})",
            f"- **Commit**: {commit} (on the runner's `autoloop/port-query-builder` only; {rng.choice(['registry lookup 401', 'no HTTPS credentials', 'no push tool'])})",
            f"- **Notes**: {upper_first(rng.choice(blockers))}. {f'Same cause as iterations 104-{n - 1}.' if n > 104 else 'First failure of the streak.'} {rng.choice(['Tried the tool twice with different arguments; both calls failed the same way.', 'Checked the tool list at the start of the run: the safe-output tools were not in it.', 'The workflow log shows the server being filtered before the agent started.'])} Committed on the runner; {tests} new tests green, {rng.randint(1, 3)} old dialect-snapshot failures unchanged. Direct git push is blocked (no credentials). {rng.choice(['A maintainer has to fix the token scope.', 'The state file was updated; the code will be lost when the runner stops.', 'Next iteration must re-implement this feature from scratch.'])}",
        ]
        if n in headless:
            # The heading of this entry was lost when an agent rewrote the file: its bullets follow the entry above.
            entries.append(block(*body))
        else:
            entries.append(block(run_heading(n, stamp, run), "", *body))
    entries.append(
        "### Iteration 103 — 2026-05-12 22:05 UTC — [Run](https://github.com/example-org/qbuild/actions/runs/71920304417)\n\n"
        "- **Status**: ✅ Accepted\n"
        "- **Change**: Add `params.ts` — named and positional parameters with per-dialect placeholders (`$1`, `?`, `:name`), array expansion for `IN` lists, and typed bindings\n"
        "- **Metric**: 57 (previous best: 56, delta: +1)\n"
        "- **Commit**: 5d1e0a7\n"
        "- **Notes**: Standalone parameter handling mirroring the reference builder's binding rules. Includes property tests and an example page. Unpaused after a 4-iteration push failure streak.\n"
    )
    entries.append(
        "### Iterations 99–102 — 2026-05-12 — ⚠️ Error (pushes failed)\n"
        "- Iters 99-101: safe-output tools not registered\n"
        '- Iter 102: create_pull_request said "No commits found", the push tool said "git auth error"\n'
    )
    entries.append(
        "### Iteration 98 — 2026-05-12 09:31 UTC — [Run](https://github.com/example-org/qbuild/actions/runs/71889012554)\n\n"
        "- **Status**: ✅ Accepted\n"
        "- **Change**: Committed the same 6 modules again: where_builder, joins, order_by, limit_offset, group_having, subqueries.\n"
        "- **Metric**: 56 (commit `0e9c41b`)\n"
    )
    entries.append(
        "### Iterations 31–97 — Various features (condensed)\n- Metrics 4→56 across builder features, dialects and recoveries.\n"
    )

    lessons = [
        "- **Iteration 121**: Safe-output tools STILL unavailable (18th consecutive error). `window_frames.ts` implemented and committed locally (commit 9b3f0e2, metric 58). ROWS/RANGE/GROUPS frames, EXCLUDE CURRENT ROW/GROUP/TIES, per-dialect rendering with a capability table. 38 tests pass. Code lost when the runner stops. Lesson: the registry block does not go away by itself; it hits EVERY run, whatever triggered it.",
        "- **Iteration 121**: Safe-output tools ARE available (run 72149980214). The 17-run streak of MCP failures is over. Branch recreated from 5d1e0a7 (params + where_builder). `window_frames.ts` with ROWS, RANGE and GROUPS frames. 38 tests pass. Metric = 58. Commit 9b3f0e2 on the canonical branch; tried to open the PR.",
        "- **Iteration 120**: Implemented `cte_builder.ts` on the canonical branch (commit 4a71c0e, metric 58). Recursive CTEs need the column list rendered explicitly for one of the dialects. 31 unit + 3 property tests. Safe-output tools STILL blocked — push failure number 17.",
        "- **Iteration 119**: Implemented `upsert.ts` on the canonical branch (commit e52b9d8, metric 58). `excluded.col` renders as `VALUES(col)` on the older dialect. Safe-output tools STILL blocked — 16th consecutive push failure.",
        "- **Iteration 118**: `json_path.ts` on the canonical branch. Path segments must be validated before rendering or quoting breaks on keys containing dots. Safe-output STILL unavailable — 15th consecutive push failure.",
        "- **Iteration 117**: `QueryBuilder.clone()` is shallow for the parameter list; tests that build two queries from one base must clone explicitly.",
        "- **Iteration 116 code ready (committed locally)**: Branch `autoloop/port-query-builder` has commit `c3d0a96` with window_frames (36 tests), params and where_builder. Metric = 58. Set up from `origin/autoloop/port-query-builder-5d1e0a7f3c2b9e41`. Cannot push — safe-output server blocked.",
        "- **Iter 104-116 (13 consecutive) failure**: policy filters out the safe-output server because the registry lookup for MCP servers answers 401, so EVERY non-default server (github, safe-outputs) is filtered. That removes `create_issue`, `create_pull_request` and the push tool. Git push needs HTTPS credentials too. **Root cause: the token the agent CLI uses in this workflow lacks the registry scope. Needs a human to fix the workflow configuration.**",
        "- **Iter 104-116 (13 consecutive) failure**: policy filters out the safe-output server because the registry lookup for MCP servers answers 401, so EVERY non-default server (github, safe-outputs) is filtered. That removes `create_issue`, `create_pull_request` and the push tool. Git push needs HTTPS credentials too. **Root cause: the token the agent CLI uses in this workflow lacks the registry scope. Needs a human to fix the workflow configuration.**",
        "- **Iteration 115 code is ready and committed locally**: commit `7f20c4b` with window_frames (33 tests), params and where_builder, plus two fixes to the parameter numbering. 1,004 tests pass. Metric = 58. Push it and open a PR as soon as pushing works.",
        "- **window_frames state (iter 114-115)**: the canonical branch is 3 commits ahead of main: params (a14e0c2), where_builder (5d1e0a7), window_frames (7f20c4b). All local, none pushed.",
        "- **Canonical branch source (iter 112)**: `origin/autoloop/port-query-builder-5d1e0a7f3c2b9e41` already has BOTH params.ts (iter 98) and where_builder.ts (iter 103) on the remote. Build the canonical branch from it. Metric = 57 with both.",
        "- **params is READY** (iter 110/111): `src/params.ts` with `bindNamed`/`bindPositional`/`expandIn`/`placeholderFor`. Number placeholders per query, not per builder. 24 unit + 3 property tests. tsc: 0 errors. Lint: 0 errors.",
        "- **Builder API**: `qb.from(t).where(...)` returns a new builder; never mutate in place. `toSQL(dialect)` returns `{ sql, params }`.",
        "- **Imports**: test files import from `src/index.ts`; property tests use `fc.stringMatching` for identifiers.",
        "- **Lint**: block statements auto-fixable with `--write --unsafe`. The complexity rule (max 15) needs helper extraction. Use `Number.NaN` and `Number.POSITIVE_INFINITY`.",
        "- **Iter 96 lesson**: quote identifiers through `dialect.quoteIdent`, never with template strings.",
    ]
    program = "port-query-builder"
    out = [
        *title(program),
        *machine_state(
            [
                ("Last Run", "2026-05-14T18:40:05Z"),
                ("Iteration Count", "121"),
                ("Best Metric", "58"),
                ("Target Metric", "—"),
                ("Branch", f"`autoloop/{program}`"),
                ("PR", "—"),
                ("Steering Issue", "—"),
                ("Paused", "true"),
                (
                    "Pause Reason",
                    '18 consecutive push failures: safe-output server blocked (MCP registry 401). Every iteration from 104-121 committed code locally and could not push it. Iter 121 implemented window_frames.ts (windowFrame/rowsBetween/rangeBetween/groupsBetween, commit 9b3f0e2, metric 58). Every safe-output tool (noop, create_issue, create_pull_request) fails with "Tool does not exist". Root cause: the agent token lacks the MCP registry scope. Needs human intervention.',
                ),
                ("Completed", "false"),
                ("Completed Reason", "—"),
                ("Consecutive Errors", "18"),
                ("Recent Statuses", ", ".join(["error"] * 18)),
            ]
        ),
        # No `---` rule between the table and Program Info.
        *program_info(
            program,
            "Port the SQL query builder to TypeScript with identical output for every supported dialect, one feature at a time.",
            "builder_features_ported (higher is better)",
            ("Pull Request", "— (safe-output server filtered — cannot open one)"),
            ("Steering Issue", "— (pending)"),
            ("Experiment Log", "— (pending)"),
            rule=False,
        ),
        *section(
            "priorities",
            "*(No specific priorities — continue porting missing builder features.)*",
            "",
            "Next features to implement (by impact):",
            "- `cte_builder.ts` — recursive and materialised CTEs (written once on a runner, never pushed — redo)",
            "- `upsert.ts` — ON CONFLICT / ON DUPLICATE KEY (written once on a runner, never pushed — redo)",
            "- `json_path.ts` — JSON path operators per dialect (written once on a runner, never pushed — redo)",
            "- `window_frames.ts` — DONE (iter 121, commit 9b3f0e2, pushed)",
        ),
        *section("lessons", *lessons),
        *section("foreclosed", "- *(none)*"),
        *section(
            "future",
            "**Next priorities**:",
            "- `cte_builder.ts` — DONE (iter 120, commit 4a71c0e, committed locally — needs push)",
            "- `upsert.ts` — DONE (iter 119, commit e52b9d8, committed locally — needs push)",
            "- `json_path.ts` — DONE (iter 118, commit 1d6b8f3, committed locally — needs push)",
            "- `window_frames.ts` — window frame clauses",
            "- `merge_into.ts` — MERGE statements for the two dialects that have them",
        ),
        *section("history", INTRO),
    ]
    return document(out, entries).encode()


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


# -- headless-entry-time-span-ranges.md ---------------------------------------------------------------------------
# Entries with no blank line after the heading, Metric and Commit on one line, one entry whose heading was lost
# (after two blank lines), range lines with time spans and three-point metric bands, no Paused row.

PAIRS = [
    "read_csv_quoted",
    "read_csv_typed",
    "write_csv_gzip",
    "read_json_lines",
    "write_json_records",
    "read_parquet_cols",
    "write_parquet_snappy",
    "read_arrow_ipc",
    "write_arrow_stream",
    "read_avro_schema",
    "write_avro_deflate",
    "read_orc_stripes",
    "read_excel_sheets",
    "write_excel_styles",
    "read_fwf_widths",
    "read_xml_xpath",
    "write_xml_attrs",
    "read_html_tables",
    "read_sql_query",
    "write_sql_chunks",
    "read_feather_mmap",
    "write_feather_lz4",
    "read_hdf_table",
    "write_hdf_append",
    "read_stata_labels",
    "write_stata_118",
    "read_sas_xport",
    "read_spss_meta",
    "read_pickle_proto5",
    "write_markdown_table",
    "write_latex_table",
    "read_clipboard_mock",
    "to_dict_records",
    "from_dict_index",
    "json_normalize_nested",
    "csv_sniff_dialect",
    "parquet_row_groups",
    "parquet_predicate",
    "arrow_dictionary",
    "avro_union_types",
    "excel_dates_1904",
    "xml_namespaces",
    "html_colspan",
    "sql_dtype_map",
    "hdf_compression",
    "stata_strl",
    "orc_predicate",
    "ipc_compression",
    "csv_chunked",
    "json_orient_split",
    "json_orient_table",
    "jsonl_chunked",
    "fwf_infer",
]


@fixture("headless-entry-time-span-ranges.md")
def headless_entry_time_span_ranges() -> bytes:
    rng = random.Random(38)
    url = "https://github.com/example-org/iobench/actions/runs/{}"
    metrics = {
        33: 163,
        32: 157,
        31: 149,
        30: 141,
        29: 133,
        28: 131,
        27: 122,
        26: 118,
        25: 104,
        24: 101,
        23: 96,
        22: 88,
        21: 76,
        20: 71,
        19: 66,
    }
    entries: list[str] = []
    minute = 15 * 60 + 2
    for n in range(33, 18, -1):
        added = metrics[n] - (metrics.get(n - 1) or 60)
        base = rng.choice(["4c1e9a (48 pairs there)", "main (22 pairs there)", "4c1e9a2d7f0b63e5 (48 pairs there)"])
        count = 24 + rng.randint(0, 24)
        names = ", ".join(rng.sample(PAIRS, count))
        minute -= rng.randint(35, 75)
        stamp = when(9, minute, "2026-06")
        head = run_heading(n, stamp, url.format(73_400_000_000 + n * 2_111_337))
        body = [
            "- **Status**: ✅ Accepted",
            f"- **Change**: Rebuilt the canonical branch on {base}. Added {count} new benchmark pairs: {names}.",
            f"- **Metric**: {metrics[n]} (previous best: {metrics.get(n - 1, 60)}, delta: +{added}) | **Commit**: {sha(rng)}",
            f"- **Notes**: {rng.choice(['The canonical branch was missing on the remote again, so it was rebuilt from the base.', 'Pairs generated with a small Python script.', 'PR created with the create-pull-request safe-output tool.', 'existing_pr was null, so a new PR was opened.'])} {rng.choice(['Steering #57 and experiment log #56 updated.', 'All pairs syntax-checked; the TS side was not run (no runtime in the sandbox).', 'The recorded best of the last run was inflated; corrected here.'])}",
        ]
        if n == 24:
            # Its heading was lost: two blank lines, then the bullets, read as part of the entry above.
            entries.append(block("", *body))
        else:
            entries.append(block(head, *body))  # no blank line after the heading
    entries.append(
        "### Iters 16–18 — 2026-06-08 22:40–00:05 UTC — ✅ (metrics 48→57→60): Canonical branch created locally several times but the push failed (hash-suffixed branch names). Iter 18: 60 pairs claimed, commits lost.\n"
    )
    entries.append(
        "### Iters 9–15 — 2026-06-08 17:10–22:40 UTC — ✅/❌ (metrics 22→48): Wrong branch names. Iter 9: 22 pairs. Added: read/write CSV variants, JSON orients, parquet basics, arrow IPC, excel sheets, xml, html tables, sql query/chunks, feather, hdf, stata, sas, spss, pickle.\n"
    )
    entries.append(
        "### Iters 1–8 — 2026-06-08 09:30–17:10 UTC — ✅ (metrics 2→21): Built the benchmark harness on main. Added csv, json, parquet, arrow, excel, xml, html, sql, feather, hdf round-trips. Final: 21 pairs.\n"
    )

    lessons = [
        "- What is counted is pairs of files (.ts and .py); a pair counts once both files exist, run or not. The sandbox cannot run the TS side.",
        "- A run is accepted only above the recorded best, so every run starts on main and adds pairs on top.",
        "- Slow formats (100k rows): excel_write=212ms, xml_read=96ms, html_tables=71ms, sas_xport=64ms. Fast: arrow_ipc=1.9ms.",
        "- Columnar formats (parquet, arrow, feather) are 20-60× faster than row formats on both sides; compare within a family.",
        "- The memory push limit is ~12 KB total across files; keep state files short.",
        "- `readCsv(text, { dialect })` takes a dialect object, not a delimiter string.",
        "- Many readers do not accept a `Buffer` — convert to `Uint8Array` first or the reference comparison fails on type.",
        "- The canonical branch `autoloop/bench-io-formats` does not persist between runs — recreate it each iteration from the newest hash-suffixed branch. The PR step is what pushes it.",
        "- `writeExcel(frames, { styles })` is the tsb-style API for styled sheets; the reference needs an engine argument.",
        "- `readFwf` infers widths from the first 100 lines; pass `widths` explicitly in benchmarks for a fair comparison.",
        "- `readSql` on the mock connection returns rows in insertion order; sort before comparing.",
        "- `toDict(orient)` and `fromDict(orient)` are standalone functions, not methods.",
        "- Date columns in excel files written with the 1904 system need `epoch1904: true` when read back.",
        "- The safe-output tools (create_pull_request, add_comment, …) are plain tool calls; a sub-agent task can call them too.",
        "- The best metric has been inflated repeatedly because branches did not persist. True remote best was 101 (iter 24). In iter 33, 163 was reached fresh from the 4c1e9a base.",
        "- XML benchmarks must pin the parser's entity expansion limit; the defaults differ between the two sides.",
        "- HDF5 writing needs the optional compression filter on the reference side; skip the compressed variant when it is missing.",
        "- Avro union types round-trip only when the schema lists `null` first.",
    ]
    future = [
        "Next formats to benchmark (iter 34+):",
        "1. `readParquet` — predicate push-down, row-group selection, column projection on wide files",
        "2. `readArrowIpc`, `writeArrowStream`, `readFeather` — memory-mapped and streaming variants",
        "3. `readAvro`, `writeAvro` — deflate and snappy codecs, schema evolution",
        "4. `readOrc`, `readSpss`, `readSas` — more metadata-only reads",
        "5. `readExcel` with multiple sheets and merged cells",
        "6. `readJsonLines` chunked over 1M lines",
        "7. Round-trip helpers: `toDict`/`fromDict` with every orient",
    ]
    program = "bench-io-formats"
    out = [
        *title(program, SHORT_BANNER),
        *machine_state(
            [
                ("Last Run", "2026-06-09T15:02:00Z"),
                ("Iteration Count", "33"),
                ("Best Metric", "163"),
                ("Target Metric", "—"),
                ("Branch", f"`autoloop/{program}`"),
                ("PR", "— (opening a new one; #77 was the last)"),
                ("Steering Issue", "#57"),
                ("Experiment Log", "#56"),
                ("Pause Reason", "—"),
                ("Completed", "false"),
                ("Completed Reason", "—"),
                ("Consecutive Errors", "0"),
                ("Recent Statuses", ", ".join(["accepted"] * 10)),
            ],
            note=False,
        ),
        *program_info(
            program,
            "Benchmark every I/O format reader and writer against the reference implementation, one batch per iteration.",
            "benchmarked_io_functions (higher is better)",
            ("Pull Request", "— (to be opened)"),
            ("Steering Issue", "#57"),
        ),
        *section("priorities", "*(No priorities — the agent chooses.)*"),
        *section("lessons", *lessons),
        *section("foreclosed", "- *(none yet)*"),
        *section("future", *future),
        *section("history", INTRO),
    ]
    return document(out, entries).encode()


# -- paused-overlapping-ranges.md ---------------------------------------------------------------------------------
# Paused row at the end of the table, a long Future Directions list of "✅ Done (iter N)" items, an entry that lost
# its heading, a heading-only entry inside a range ("Iters 58–68 (except 61)"), overlapping ranges and gaps.

KERNELS = [
    "utf8_validate",
    "utf16_transcode",
    "case_fold_simple",
    "case_fold_full",
    "nfc_normalize",
    "nfd_normalize",
    "grapheme_split",
    "word_break",
    "line_break",
    "bidi_levels",
    "levenshtein",
    "damerau",
    "jaro_winkler",
    "soundex",
    "metaphone",
    "ngram_index",
    "trigram_sim",
    "regex_literal",
    "regex_class",
    "regex_alt",
    "tokenize_ws",
    "tokenize_bpe",
    "stem_porter",
    "stem_snowball",
    "stopword_filter",
    "html_escape",
    "html_unescape",
    "url_encode",
    "url_decode",
    "base64_encode",
    "base64_decode",
    "hex_encode",
    "crc32",
    "fnv1a",
    "xxhash32",
    "murmur3",
    "wrap_greedy",
    "wrap_optimal",
    "justify_full",
    "pad_center",
    "trim_unicode",
    "split_lines",
    "count_words",
    "count_chars",
    "reverse_graphemes",
    "slugify",
    "transliterate",
    "collate_root",
]


@fixture("paused-overlapping-ranges.md")
def paused_overlapping_ranges() -> bytes:
    rng = random.Random(88)
    url = "https://github.com/example-org/textbench/actions/runs/{}"
    accepted = {
        86: (232, 226),
        80: (226, 219),
        77: (219, 207),
        74: (207, 198),
        70: (198, 190),
        66: (190, 184),
        63: (184, 178),
    }
    entries: list[str] = []
    minute = 22 * 60 + 30
    batch = pick(rng, KERNELS, 6)
    for n in range(88, 61, -1):
        minute -= rng.randint(26, 55)
        stamp = when(21, minute, "2026-07")
        head = run_heading(n, stamp, url.format(75_000_000_000 + n * 1_119_773))
        if n in accepted:
            metric, prev = accepted[n]
            body = [
                "- **Status**: ✅ Accepted",
                f"- **Change**: Added {metric - prev} pairs: {', '.join(pick(rng, KERNELS, metric - prev))}.",
                f"- **Metric**: {metric} (previous best: {prev}, delta: +{metric - prev})",
                f"- **Commit**: {sha(rng)}",
                f"- **Notes**: Safe-output tools available this run. {rng.choice(['Unicode kernels need the same ICU data version on both sides.', 'Hash kernels compared on 1M random 64-byte strings.', 'Tokenizers compared on the same 10 MB corpus slice.'])} {rng.choice(['Pushed all files.', 'PR #71 updated.', 'All pairs run in CI.'])}",
            ]
            batch = pick(rng, KERNELS, 6)
        else:
            errors = n - max((k for k in accepted if k < n), default=61)
            body = [
                "- **Status**: ⚠️ Error",
                f"- **Change**: Added 6 pairs: {', '.join(batch)}. Local commit {sha(rng)}. Metric would be 238 (+6 vs best 232).",
                f"- **Metric**: N/A (push blocked — safe-output server filtered by policy; {rng.choice(['the usual blocker', f'{errors} errors in a row now', 'still paused'])})",
                f"- **Commit**: {sha(rng)} (on the runner only)",
                f"- **Notes**: Twelve files written and committed on the runner's branch. {rng.choice(['The agent log lists both MCP servers as filtered by policy.', 'Same 6 pairs as the runs before.', 'Next run should push when the tools are available.'])} {rng.choice(['The branch base was checked first: the previous local commit is not on the remote.', 'Both sides of every pair were syntax-checked; the reference side also ran locally.', 'Pairs cover the kernels listed as planned in Future Directions.'])}",
            ]
        if n == 83:
            entries.append(block(*body))  # heading lost
        else:
            entries.append(block(head, "", *body))
    entries.append(
        "### Iters 51–61 (except 54) — ⚠️ Error: no safe-output server. Pairs written on the runner each time; no push got through.\n"
    )
    entries.append("### Iteration 54 — 2026-07-20 03:06 UTC — ✅ metric=178 (+8) | Commit: 3b72e0d\n")
    entries.append(
        "### Iters 43–53 — 2026-07-19/20 — mix of ✅ accepted (43: +6, 45: +8, 48: +5, 50: +17) and ⚠️ errors.\n"
    )
    entries.append(
        "### Iters 32–39 — 2026-07-19 (all ✅ accepted, metrics 101→142): Rebuilt from the 7d0c2e branch; added unicode/hash/tokenizer kernels.\n"
    )
    entries.append(
        "### Iters 1–31 — 2026-07-18/19 (all ✅ accepted, metrics progressively 0→101): Harness established, steady accumulation.\n"
    )

    lessons = [
        "- The metric is the smaller of the two bench counts; branch autoloop/bench-text-kernels. Best 232 after iter 86, commit 5e0b1d4. Push blocker from iter 87 on: the safe-output server is blocked by policy every run. The agent log shows both MCP servers filtered at start-up. Needs a run configuration that allows the server.",
        "- No TS runtime installed; TS benchmark files are validated by the file-count metric only.",
        "- The memory push limit is ~8 KB per file (~10 KB across all files).",
        "- Unicode kernels: normalize (NFC/NFD/NFKC/NFKD), case folding (simple/full), grapheme/word/line breaking, bidi levels — all benchmarked.",
        "- String distances: levenshtein, damerau, jaro_winkler, hamming, lcs — all benchmarked with the same 10k pair set.",
        "- Hashes: crc32, fnv1a, xxhash32, murmur3 — compare on identical byte buffers, not JS strings.",
        "- Branching: check out origin/autoloop/bench-text-kernels-7d0c2e91a4b5f360 as the local autoloop/bench-text-kernels, add pairs, commit, push with the push tool to PR #71.",
        "- Tokenizers take `{ vocab, merges }`; the reference loads them from files — serialise once and share.",
        "- Stemmers: Porter and Snowball English only; other languages are not exported.",
        "- `wrap(text, { width, mode })` supports greedy and optimal (Knuth-Plass) modes; the reference has greedy only.",
        "- HTML escaping differs on `'`: we emit `&#39;`, the reference `&#x27;`. Compare decoded output.",
        "- `slugify` lower-cases after transliteration; the reference does it before. Results differ for `ß`.",
        "- Collation needs the root locale data; skip locale-specific collations in CI.",
        "- `Intl.Segmenter` is not used; our segmenter is table-driven and must be kept in sync with the Unicode version.",
        "- The benchmark harness times out at 30 s; grapheme benchmarks over 10 MB need SIZE reduced.",
    ]
    done = [
        "- Grapheme cluster breaking — ✅ Done (iter 41)",
        "- Word and line breaking — ✅ Done (iter 42)",
        "- Bidi embedding levels — ✅ Done (iter 44)",
        "- Simple and full case folding — ✅ Done (iter 45)",
        "- NFC/NFD/NFKC/NFKD — ✅ Done (iter 46)",
        "- levenshtein, damerau, jaro_winkler — ✅ Done (iter 50)",
        "- soundex, metaphone — ✅ Done (iter 52)",
        "- ngram index, trigram similarity — ✅ Done (iter 55)",
        "- regex literal/class/alternation micro-benchmarks — ✅ Done (iter 57)",
        "- whitespace and BPE tokenizers, porter and snowball stemmers, stop-word filter — ✅ Done (iter 61).",
        "- html escape/unescape, url encode/decode, base64, hex — ✅ Done (iter 70).",
        "- crc32, fnv1a, xxhash32, murmur3 — ✅ Done (already on the branch from iter 72, actual metric 201).",
        "- greedy and optimal wrapping, full justification, centre padding — ✅ Done (iter 74).",
        "- unicode trim, line splitting, word/char counts — ✅ Done (iter 74).",
        "- grapheme reversal, slugify, transliteration — ✅ Done (iter 77).",
        "- root collation — ✅ Done (iter 77).",
        "- UTF-8 validation, UTF-16 transcoding — ✅ Done (iter 80).",
        "- Hamming and LCS distances — ✅ Done (iter 80).",
        "- Suffix array construction — ✅ Done (iter 80 via bench_suffix_array).",
        "- Aho–Corasick multi-pattern search — ✅ Done (iter 86).",
        "- Boyer–Moore–Horspool search — ✅ Done (iter 86).",
        "- Rolling hash (Rabin–Karp) — ✅ Done (iter 86).",
        "- Burrows–Wheeler transform — ✅ Done (iter 86).",
        "- Run-length encoding — ✅ Done (iter 86).",
        "- Unicode script detection if the API exists.",
        "- Emoji sequence segmentation if the API exists.",
        "- Locale-aware upper/lower casing (Turkish, Lithuanian).",
        "- More tokenizers: WordPiece, unigram.",
        "- Regex engine comparison beyond micro-benchmarks.",
        "- Hyphenation (Liang) — planned for the next push (local commit 6d2a0f9).",
        "- Soft-hyphen aware wrapping — planned for the next push (local commit 6d2a0f9).",
        "- Confusable detection (UTS #39 skeletons) — planned for the next push (local commit 6d2a0f9).",
        "- Punycode encode/decode — planned for the next push (local commit 6d2a0f9).",
        "- Quoted-printable encode/decode — planned for the next push (local commit 6d2a0f9).",
        "- Diff (Myers) on lines and on characters — planned for the next push (local commit 6d2a0f9).",
        "- Fuzzy search (bitap) if it is exported.",
        "- Spell-check suggestions (SymSpell) if it is exported.",
        "- Sentence segmentation for more than the root locale.",
        "- Unicode property lookups (general category, script, east-asian width).",
        "- Text similarity with TF-IDF cosine.",
        "- Markdown inline escaping.",
        "- CSV field quoting as a text kernel.",
    ]
    program = "bench-text-kernels"
    out = [
        *title(program, SHORT_BANNER),
        *machine_state(
            [
                ("Last Run", "2026-07-21T22:30:00Z"),
                ("Iteration Count", "88"),
                ("Best Metric", "232"),
                ("Target Metric", "—"),
                ("Branch", f"`autoloop/{program}`"),
                ("PR", "#71"),
                ("Steering Issue", "#66"),
                ("Experiment Log", "#65"),
                (
                    "Pause Reason",
                    "safe-output server filtered by policy; pushes failed in 2 runs in a row (iters 87-88) after 5 earlier failures",
                ),
                ("Completed", "false"),
                ("Completed Reason", "—"),
                ("Consecutive Errors", "7"),
                ("Recent Statuses", "error, error, error, error, error, error, error, accepted, error, accepted"),
                ("Paused", "true"),  # after Recent Statuses, out of order
            ],
            note=False,
        ),
        *program_info(
            program,
            "Benchmark every text-processing kernel against the reference implementation, one batch per iteration.",
            "benchmarked_kernels (higher is better)",
            ("Pull Request", "#71"),
            ("Steering Issue", "#66"),
        ),
        *section("priorities", NO_PRIORITIES),
        *section("lessons", *lessons),
        # No Foreclosed Avenues section.
        *section("future", *done),
        *section("history", INTRO),
    ]
    return document(out, entries).encode()


# -- near-budget-lower-is-better.md -------------------------------------------------------------------------------
# A tidy upstream-shaped file for a lower-is-better metric, grown to just under the budget (above the 80% mark that
# makes compaction aggressive): deltas are negative when the metric improves; upstream-shaped range lines at the end.

COLD_START_CHANGES = [
    (
        "Lazy-load the YAML parser only when a `.yml` config is present",
        "Most users have JSON configs; the parser was 11% of startup.",
    ),
    (
        "Replace the glob-based plugin scan with a single `readdir` of the plugin folder",
        "The glob library compiled 40 patterns at import time.",
    ),
    (
        "Ship a V8 code cache for the CLI entry bundle",
        "Code cache is keyed by the bundle hash; stale caches are ignored, never wrong.",
    ),
    (
        "Defer telemetry initialisation until after the first command finishes",
        "Telemetry opened a socket on the critical path.",
    ),
    (
        "Inline the 14 smallest modules of the command router",
        "Fewer module records to instantiate; no behaviour change.",
    ),
    ("Precompute the help text at build time", "Help text was rendered from markdown at every start."),
    (
        "Drop the polyfill bundle for runtimes that have `structuredClone`",
        "Feature-detected at build time; two bundles are published.",
    ),
    (
        "Read the config file with one `readFileSync` instead of a stream",
        "Config files are under 4 KB; streaming only added ticks.",
    ),
    ("Memoise the version check result for 24 hours in the cache folder", "The check did a DNS lookup on every start."),
    (
        "Avoid `require.resolve` for built-in plugins",
        "Resolution walked 9 node_modules folders for names we ship ourselves.",
    ),
    (
        "Replace the colour library with a 30-line ANSI helper",
        "The library probed the terminal with three syscalls at import.",
    ),
    ("Move the update notifier into a detached child process", "The notifier's network call no longer delays exit."),
    ("Snapshot the parsed command table into JSON at build time", "Parsing the command decorators cost 38 ms."),
    (
        "Use a `Map` for the alias table instead of an object with a prototype",
        "Negligible; kept because it simplifies the code.",
    ),
    ("Bundle with tree-shaking of the unused locale data", "Locale data for 60 languages was loaded to print English."),
    ("Warm the filesystem cache by reading the lockfile early", "Helps only on cold disks; the benchmark runs warm."),
    (
        "Remove the `source-map-support` install from production builds",
        "It patched `Error.prepareStackTrace` at start.",
    ),
    (
        "Compile the argument schema to a validator at build time",
        "Runtime schema compilation was the single biggest item left.",
    ),
    (
        "Replace `fs.promises` with sync calls in the startup path",
        "Each awaited call yields to the event loop; the start path is sequential anyway.",
    ),
    (
        "Split the `init` command into its own lazily loaded chunk",
        "Its template engine dependency was loaded for every command.",
    ),
    (
        "Use `process.hrtime.bigint` instead of the `performance` polyfill",
        "The polyfill pulled in an event emitter shim.",
    ),
    ("Cache the resolved project root per working directory", "Walking up to find the root stat-ed 7 directories."),
    ("Trim the environment variable scan to the 12 variables we read", "The full scan normalised every variable name."),
    (
        "Load shell completion scripts only when `--completion` is passed",
        "They were read and templated at every start.",
    ),
]


@fixture("near-budget-lower-is-better.md")
def near_budget_lower_is_better() -> bytes:
    rng = random.Random(29)
    target_size = 29_640
    url = "https://github.com/example-org/coldstart/actions/runs/{}"
    best = 1310.0
    entries_oldest_first: list[tuple[int, str, str]] = []
    statuses: list[str] = []
    minute = 0
    for n in range(31, 200):
        minute += rng.randint(300, 760)
        head = run_heading(n, when(3 + minute // 1440, minute, "2026-09"), url.format(78_100_000_000 + n * 3_331_907))
        change, note = COLD_START_CHANGES[(n * 7) % len(COLD_START_CHANGES)]
        roll = rng.random()
        if roll < 0.45:
            value = round(best * rng.uniform(0.93, 0.995), 1)
            body = bullets(
                ("Status", "✅ Accepted"),
                ("Change", f"{change}."),
                ("Metric", f"{value} (previous best: {best}, delta: {round(value - best, 1)})"),
                ("Commit", sha(rng)),
                ("CI fix attempts", str(rng.randint(1, 3)) if rng.random() < 0.25 else None),
                (
                    "Notes",
                    f"{note} Median of 30 cold runs on the CI runner; p95 moved from {round(best * 1.21, 1)} to {round(value * 1.19, 1)} ms.",
                ),
            )
            best = value
            status = "accepted"
        elif roll < 0.85:
            value = round(best * rng.uniform(1.0, 1.06), 1)
            body = bullets(
                ("Status", "❌ Rejected"),
                ("Change", f"{change}."),
                ("Metric", f"{value} (previous best: {best}, delta: +{round(value - best, 1)})"),
                (
                    "Notes",
                    f"Hypothesis: {note[0].lower() + note[1:]} No measurable gain over noise (±{rng.randint(6, 14)} ms); reverted.",
                ),
            )
            status = "rejected"
        else:
            failure = rng.choice(
                [
                    "timed out while installing the toolchain",
                    "could not download the fixture project",
                    "failed before measuring: the bundle step ran out of memory",
                ]
            )
            body = bullets(
                ("Status", "⚠️ Error"),
                ("Change", f"{change}."),
                ("Notes", f"The benchmark job {failure}; nothing measured."),
            )
            status = "error"
        entries_oldest_first.append((n, block(head, "", *body), status))
        statuses.append(status)
        text = render_near_budget(entries_oldest_first, statuses)
        if len(text.encode()) > target_size:
            entries_oldest_first.pop()
            statuses.pop()
            break
    return render_near_budget(entries_oldest_first, statuses).encode()


def render_near_budget(entries: list[tuple[int, str, str]], statuses: list[str]) -> str:
    """The whole file for the entries kept (oldest first); Best Metric is the best accepted value among them."""
    newest = entries[-1][0]
    stamp = entries[-1][1].split(" — ")[1][:16]
    last_run = stamp.replace(" ", "T") + ":00Z"
    best = min(
        float(line.split("**Metric**: ")[1].split(" ")[0])
        for _, text, status in entries
        if status == "accepted"
        for line in text.splitlines()
        if line.startswith("- **Metric**: ")
    )
    errors = trailing_errors(statuses)
    lessons = [
        "- Measure cold starts only: the CI job drops the page cache before each of the 30 runs. Warm numbers hide import cost.",
        "- Import cost dominates: `--cpu-prof` on a cold start attributes 70% of the time to module evaluation, not to our code paths.",
        "- Anything done at import time is paid by every command. Move work behind the command that needs it.",
        "- Build-time work is free at runtime: help text, the command table and the argument validator are now all generated.",
        "- Noise on the runner is ±6-14 ms; a change under 1% is indistinguishable from noise and gets rejected.",
        "- Sync filesystem calls are faster than promises in a strictly sequential start path.",
        "- Code cache helps only when the bundle is large; below ~400 KB it costs more to read than it saves.",
        "- Network on the start path is never acceptable, not even behind a cache check that can miss.",
        "- Keep one change per iteration: two changes at once made iteration 38 impossible to attribute.",
        "- The benchmark fixture project has 3 plugins; results on projects with 30 plugins differ — check both before claiming a plugin-scan win.",
        "- p95 tracks the median closely here; report both, accept on the median.",
        "- Node's `--snapshot-blob` is not available on the oldest supported runtime; feature-detect it.",
    ]
    foreclosed = [
        "- Rewriting the CLI entry in a compiled language: out of scope for this program (the goal is the existing codebase).",
        "- Bundling everything into one file: the bundle's parse time grew faster than the module-resolution time it saved.",
        "- Worker threads for plugin discovery: thread start-up (~30 ms) exceeds the work it parallelises.",
        "- Disabling source maps in development builds: they are not loaded in the benchmarked production build anyway.",
        "- Caching the whole module graph on disk: invalidation was unsound when plugins changed between runs.",
        "- Lowering the V8 heap size: no effect on start time, more GC later.",
    ]
    future = [
        "- Start-up snapshot (`--snapshot-blob`) on runtimes that support it.",
        "- Audit transitive dependencies imported at start; five still do work at import time.",
        "- Measure with 30 plugins installed, not only the 3 in the fixture project.",
        "- Teach the config loader to skip validation when the file hash is unchanged.",
        "- Add a start-up budget check to CI so regressions fail the PR.",
    ]
    program = "cold-start-latency"
    rows = upstream_rows(
        program,
        last_run=last_run,
        iterations=str(newest),
        best=str(best),
        target="250",
        direction="lower",
        pr="#214",
        issue="#198",
        errors=str(errors),
        statuses=", ".join(statuses[-10:]),
    )
    out = [
        *upstream_head(
            program,
            "Cut the CLI's cold-start time (`cli --version` on a fresh process) without changing behaviour",
            "cold_start_ms",
            rows,
        ),
        *section("priorities", "Import-time work first; network and filesystem second. Do not touch the plugin API."),
        *section("lessons", *lessons),
        *section("foreclosed", *foreclosed),
        *section("future", *future),
        *section("history", INTRO),
    ]
    history = [text for _, text, _ in reversed(entries)]
    history.append(
        "### Iters 16–30 — ✅ (metrics 1840→1310): code cache, lazy router, config fast path, no network at start\n"
    )
    history.append("### Iters 1–15 — ✅ (metrics 2950→1840): baseline harness, profiling, first import-time removals\n")
    return document(out, history)


# -- over-budget-long-history.md ----------------------------------------------------------------------------------
# Never compacted: 70+ detailed entries and no range lines, well over the 30,720-byte budget.

DOC_TOPICS = [
    "the `config` module",
    "the HTTP client",
    "the retry helpers",
    "the CLI commands",
    "the plugin API",
    "the cache layer",
    "the schema validators",
    "the logging adapters",
    "the auth providers",
    "the storage backends",
    "the task queue",
    "the template filters",
    "the date helpers",
    "the error classes",
    "the test utilities",
    "the migration runner",
    "the event bus",
    "the metrics exporter",
    "the feature flags",
    "the i18n helpers",
    "the rate limiter",
]


@fixture("over-budget-long-history.md")
def over_budget_long_history() -> bytes:
    rng = random.Random(72)
    url = "https://github.com/example-org/docsweep/actions/runs/{}"
    best = 41.2
    entries: list[str] = []
    statuses: list[str] = []
    minute = 0
    for n in range(1, 89):
        minute += rng.randint(420, 900)
        day = 1 + minute // (24 * 60)
        month = "2026-10" if day <= 31 else "2026-11"
        day = day if day <= 31 else day - 31
        head = run_heading(n, when(day, minute, month), url.format(82_000_000_000 + n * 2_718_281))
        topic = DOC_TOPICS[(n * 5) % len(DOC_TOPICS)]
        roll = rng.random()
        documented = rng.randint(4, 19)
        if roll < 0.62:
            value = round(best + rng.uniform(0.3, 1.4), 1)
            notes = [
                "Examples are doctested, so each one runs in CI.",
                "Two symbols turned out to be private and were renamed with a leading underscore instead.",
                "Cross-references added to the related guide pages.",
                "The docstring linter now passes for the whole module.",
            ]
            body = bullets(
                ("Status", "✅ Accepted"),
                (
                    "Change",
                    f"Documented {documented} public symbols in {topic}: parameters, return values, raised errors and one example each.",
                ),
                ("Metric", f"{value}% (previous best: {best}%, delta: +{round(value - best, 1)})"),
                ("Commit", sha(rng)),
                ("CI fix attempts", str(rng.randint(1, 2)) if rng.random() < 0.2 else None),
                ("Notes", rng.choice(notes)),
            )
            best = value
            statuses.append("accepted")
        elif roll < 0.88:
            body = bullets(
                ("Status", "❌ Rejected"),
                ("Change", f"Generated docstrings for {documented} symbols in {topic} from their type annotations."),
                (
                    "Metric",
                    f"{round(best + rng.uniform(0.1, 0.9), 1)}% (previous best: {best}%, delta: +{round(rng.uniform(0.1, 0.9), 1)})",
                ),
                (
                    "Notes",
                    "Coverage went up but the review check rejected the text as restating the signature; coverage only counts reviewed docstrings from now on.",
                ),
            )
            statuses.append("rejected")
        else:
            notes = [
                "The docs build failed on a broken cross-reference in an unrelated page.",
                "Doctests timed out on the shared runner.",
                "The coverage tool crashed on a decorated class.",
            ]
            body = bullets(("Status", "⚠️ Error"), ("Change", f"Documented {topic}."), ("Notes", rng.choice(notes)))
            statuses.append("error")
        entries.append(block(head, "", *body))
    program = "docs-coverage"
    rows = upstream_rows(
        program,
        last_run="2026-11-12T06:41:00Z",
        iterations=str(len(entries)),
        best=f"{best}%",
        target="95%",
        direction="higher",
        pr="#61",
        issue="#60",
        errors=str(trailing_errors(statuses)),
        statuses=", ".join(statuses[-10:]),
    )
    out = [
        *upstream_head(
            program,
            "Document every public symbol of the library with a reviewed docstring and a runnable example",
            "documented_public_symbols_pct",
            rows,
        ),
        *section("priorities", NO_PRIORITIES),
        *section(
            "lessons",
            "- Docstrings generated from type annotations are rejected by review; write what the type does not say.",
            "- Doctested examples catch stale docs immediately — keep every example runnable.",
            "- Private helpers inflate the denominator; renaming them with a leading underscore is a legitimate fix.",
            "- The coverage tool skips overloads; document the implementation signature.",
        ),
        *section("foreclosed", "- Generating docstrings from annotations: rejected by review in every attempt."),
        *section("future", "- A glossary page linked from every module docstring."),
        *section("history", INTRO),
    ]
    return document(out, list(reversed(entries))).encode()


# -- over-budget-lessons-heavy.md ---------------------------------------------------------------------------------
# Over the budget because of Lessons Learned and Foreclosed Avenues, not history: pinned lessons (📌 and
# <!-- pin -->), IMPORTANT/CRITICAL markers, expiry dates, near-duplicates, and a long list of foreclosed avenues.

FLAKY_AREAS = [
    "the websocket reconnect tests",
    "the scheduler tests",
    "the file-watcher tests",
    "the cache expiry tests",
    "the retry backoff tests",
    "the browser download tests",
    "the clipboard tests",
    "the DNS resolver tests",
    "the parallel build tests",
    "the locale formatting tests",
    "the timer mocks",
    "the database fixtures",
    "the snapshot tests",
    "the port allocation helper",
    "the temp directory cleanup",
    "the log capture fixture",
]


@fixture("over-budget-lessons-heavy.md")
def over_budget_lessons_heavy() -> bytes:
    rng = random.Random(45)
    url = "https://github.com/example-org/flakehunt/actions/runs/{}"
    causes = [
        "relied on wall-clock time instead of the injected clock",
        "shared a global port between workers",
        "asserted on the order of a `Set` iteration",
        "left a timer running after the test finished",
        "depended on the test file order",
        "read a temp directory another test was deleting",
        "used a real DNS lookup",
        "raced the file watcher's debounce",
        "assumed the runner's locale was en-US",
        "compared floating-point durations exactly",
    ]
    fixes = [
        "inject the clock",
        "allocate a port per worker",
        "sort before asserting",
        "clear the timer in teardown",
        "give every file its own state",
        "use a unique temp directory per test",
        "stub the resolver",
        "wait for the watcher's ready event",
        "pin the locale in the test setup",
        "compare with a tolerance",
    ]
    lessons: list[str] = []
    for i in range(78):
        area = FLAKY_AREAS[i % len(FLAKY_AREAS)]
        cause = causes[(i * 3) % len(causes)]
        prefix = ""
        suffix = ""
        if i in (0, 7, 19):
            prefix = "📌 "
        if i in (3, 26):
            prefix = "IMPORTANT: "
        if i in (11, 33):
            prefix = "**CRITICAL**: "
        if i in (5, 30):
            suffix = " <!-- pin -->"
        if i in (14, 21, 38):
            suffix = f" (expires 2026-{1 + i % 12:02d}-15)"
        lessons.append(
            f"- {prefix}Iteration {8 + i}: {area} {cause}; the fix was to {fixes[(i * 3) % len(fixes)]}. "
            f"{rng.choice(['Re-ran 200 times without a failure.', 'Quarantine label removed.', 'The same pattern exists in two more suites — fixed there too.', 'Documented in CONTRIBUTING under test hygiene.'])} "
            f"{rng.choice(['Found by bisecting the rerun log, not by reading the test.', 'The failure rate before the fix was about 1 in 40 runs.', 'Only reproducible under the parallel runner with 8 workers.', 'The stack trace pointed at the wrong test; the culprit ran earlier in the same worker.'])}{suffix}"
        )
    lessons.insert(20, lessons[4].replace("Re-ran 200 times", "Re-ran 300 times"))  # a near-duplicate
    foreclosed = []
    for i in range(60):
        area = FLAKY_AREAS[(i * 5) % len(FLAKY_AREAS)]
        foreclosed.append(
            f"- {rng.choice(['Retrying', 'Increasing the timeout of', 'Running serially', 'Skipping on CI', 'Adding sleeps to', 'Mocking the whole module in'])} "
            f"{area}: {rng.choice(['hides the race instead of fixing it', 'tripled the suite time with no fix', 'the failure moved to another test', 'reviewers rejected it twice', 'the flake rate was unchanged after 500 runs', 'breaks the coverage of the code under test'])} "
            f"({rng.choice(['tried in', 'ruled out in', 'measured in', 'reverted in'])} iter {5 + i % 47}; {rng.choice(['see the rerun log attached to the PR', 'numbers in the experiment issue', 'a maintainer confirmed', 'no need to try again'])})."
        )
    entries = []
    best = 9
    minute = 0
    for n in range(52, 64):
        minute += rng.randint(500, 900)
        head = run_heading(n, when(1 + minute // 1440, minute, "2026-08"), url.format(77_600_000_000 + n * 4_441_003))
        area = FLAKY_AREAS[n % len(FLAKY_AREAS)]
        if n % 3:
            value = best - 1 if best > 3 else best
            body = bullets(
                ("Status", "✅ Accepted"),
                ("Change", f"Fixed the flake in {area}: it {causes[n % len(causes)]}."),
                ("Metric", f"{value} (previous best: {best}, delta: {value - best})"),
                ("Commit", sha(rng)),
                ("Notes", "Verified with 200 repeated CI runs of the affected suite."),
            )
            best = value
        else:
            body = bullets(
                ("Status", "❌ Rejected"),
                ("Change", f"Tried to fix {area} by retrying the assertion."),
                ("Metric", f"{best} (previous best: {best}, delta: 0)"),
                ("Notes", "Retrying is foreclosed; the flake rate did not change."),
            )
        entries.append(block(head, "", *body))
    program = "flaky-test-hunt"
    rows = upstream_rows(
        program,
        last_run="2026-08-08T17:12:00Z",
        iterations="63",
        best=str(best),
        target="0",
        direction="lower",
        pr="#140",
        issue="#139",
        errors="0",
        statuses="accepted, rejected, accepted, accepted, rejected, accepted, accepted, rejected, accepted, accepted",
    )
    out = [
        *upstream_head(
            program,
            "Drive the number of known-flaky tests (failing at least once in 200 reruns) to zero",
            "flaky_tests",
            rows,
        ),
        *section("priorities", "Fix causes, never symptoms: no retries, no sleeps, no longer timeouts."),
        *section("lessons", LESSONS_INTRO, "", *lessons),
        *section("foreclosed", FORECLOSED_INTRO, "", *foreclosed),
        *section(
            "future",
            "- A nightly job that reruns the whole suite 50 times and files an issue per new flake.",
            "- Lint rule against real timers in tests.",
        ),
        *section("history", INTRO),
    ]
    history = [
        *reversed(entries),
        "### Iters 20–51 — ✅ (metrics 31→9): clock injection, per-worker ports, ordered assertions\n",
        "### Iters 1–19 — ✅ (metrics 58→31): quarantine list, rerun harness, first fixes\n",
    ]
    return document(out, history).encode()


# -- bom-crlf-no-final-newline.md ---------------------------------------------------------------------------------
# Not seen in the real corpus, but what a Windows editor leaves behind: a UTF-8 BOM, CRLF line endings, trailing
# spaces, and no newline after the last line.


@fixture("bom-crlf-no-final-newline.md")
def bom_crlf_no_final_newline() -> bytes:
    program = "bundle-size-trim"
    rows = upstream_rows(
        program,
        last_run="2026-04-09T10:15:00Z",
        iterations="3",
        best="412.6",
        target="350",
        direction="lower",
        pr="#8",
        issue="#7",
        errors="0",
        statuses="accepted, rejected, accepted",
    )
    lines = [
        *upstream_head(
            program,
            "Shrink the production web bundle without removing features",
            "bundle_kb_gzip",
            rows,
            hard_breaks=True,
        ),
        *section("priorities", "Edited by a maintainer on Windows: keep the date picker, it is used on three pages. "),
        *section(
            "lessons",
            "- The chart library is imported whole by one dashboard widget; a per-chart import saves 48 KB gzip.",
            "- Moment-style locale bundles are the largest single item; only `en` and `de` are used.\t",
        ),
        *section("foreclosed", "- *(none yet)*"),
        *section("future", "- Replace the icon font with inline SVG sprites."),
        *section(
            "history",
            "### Iteration 3 — 2026-04-09 10:15 UTC — [Run](https://github.com/example-org/webapp/actions/runs/70112334908)",
            "",
            "- **Status**: ✅ Accepted",
            "- **Change**: Import chart types individually in the dashboard widget.",
            "- **Metric**: 412.6 (previous best: 460.9, delta: -48.3)",
            "- **Commit**: 2c8e0f1",
            "",
            "### Iteration 2 — 2026-04-08 22:40 UTC — [Run](https://github.com/example-org/webapp/actions/runs/70087720143)",
            "",
            "- **Status**: ❌ Rejected",
            "- **Change**: Drop the polyfill bundle.",
            "- **Metric**: 458.1 (previous best: 460.9, delta: -2.8)",
            "- **Notes**: Breaks the supported older browser; a maintainer vetoed it.",
            "",
            "### Iteration 1 — 2026-04-08 11:02 UTC — [Run](https://github.com/example-org/webapp/actions/runs/70061938270)",
            "",
            "- **Status**: ✅ Accepted",
            "- **Change**: Restrict date-library locales to `en` and `de`.",
            "- **Metric**: 460.9 (previous best: 503.4, delta: -42.5)",
            "- **Commit**: 9f1b3a7",
        ),
    ]
    # Program Info lines end in two spaces (hard breaks).  Written with a BOM and CRLF line endings, and without the
    # blank line that ends every section: no newline after the last line.
    return b"\xef\xbb\xbf" + "\r\n".join(lines[:-1]).encode()


# -- invalid-utf8-bytes.md ----------------------------------------------------------------------------------------
# Not seen in the real corpus (there the damage is already U+FFFD), but the raw form of the same corruption: an emoji
# cut in the middle of its four bytes, a Latin-1 byte, a stray 0xFF.  Read with surrogateescape; kept byte for byte.


@fixture("invalid-utf8-bytes.md")
def invalid_utf8_bytes() -> bytes:
    # The file is written as text and encoded with surrogateescape, which turns each escaped byte back into itself.
    def raw(data: bytes) -> str:
        return data.decode("utf-8", "surrogateescape")

    def cut(emoji: str) -> str:
        """The first three of the emoji's four bytes."""
        return raw(emoji.encode()[:3])

    utf16_mark, lone_byte = raw(b"\xff\xfe"), raw(b"\x80")
    priority = "The French catalog was once saved as Latin-1 by a tool: strings like café and crème must be re-encoded, not deleted."

    program = "i18n-catalog-sync"
    rows = upstream_rows(
        program,
        last_run="2026-07-02T05:30:00Z",
        iterations="4",
        best="0.913",
        target="1.0",
        direction="higher",
        pr="#19",
        issue="#18",
        errors="0",
        statuses="accepted, accepted, error, accepted",
    )
    lines = [
        *title(program),
        # The note's 🤖 is cut after three bytes; no blank line after the heading, none after the note.
        *section("machine_state", NOTE.replace("🤖", cut("🤖")), *table(rows), gap=False),
        *program_info(
            program,
            "Keep every translation catalog in sync with the source strings, with no stale or missing keys",
            "catalog_sync_ratio (higher is better)",
            ("Pull Request", "#19"),
            ("Issue", "#18"),
        ),
        # Saved as Latin-1 by a tool (é and è are the single bytes E9 and E8); no blank line after the heading.
        *section("priorities", raw(priority.encode("latin-1")), gap=False),
        *section(
            "lessons",
            "- Compare catalogs by message id, never by line number.",
            "- Plural forms differ per language; a key is complete only when every plural category has a string.",
        ),
        *section("foreclosed", "- *(none yet)*"),
        # The heading's 🔭 is cut after three bytes; no blank line between the rule and the heading.
        "---",
        *section(
            "future",
            "- Detect catalogs whose encoding is not UTF-8 before parsing them.",
            rule=False,
            heading=SECTION_KINDS["future"][0].replace("🔭", cut("🔭")),
        ),
        *section(
            "history",
            "### Iteration 4 — 2026-07-02 05:30 UTC — [Run](https://github.com/example-org/i18n/actions/runs/75210093341)",
            "",
            "- **Status**: ✅ Accepted",
            "- **Change**: Re-encode the French catalog from Latin-1 to UTF-8 before syncing.",
            "- **Metric**: 0.913 (previous best: 0.871, delta: +0.042)",
            "- **Commit**: 1b0c9e2",
            f"- **Notes**: The importer's log still shows the raw bytes it choked on: {utf16_mark} at the start of one file (a UTF-16 mark) and a lone {lone_byte}.",
            "",
            "### Iteration 3 — 2026-07-01 17:12 UTC — [Run](https://github.com/example-org/i18n/actions/runs/75183556270)",
            "",
            "- **Status**: ⚠️ Error",
            "- **Change**: Sync all catalogs.",
            "- **Notes**: The parser failed on the first non-UTF-8 byte and aborted the whole run.",
            "",
            "### Iters 1–2 — ✅ (metrics 0.55→0.871): key extraction, catalog diff, missing-key report",
        ),
    ]
    return "\n".join(lines).encode("utf-8", "surrogateescape")


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, build in FIXTURES.items():
        data = build()
        path = OUT / name
        if check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(name)
        else:
            path.write_bytes(data)
            print(f"{len(data):7,d}  {name}")
    if stale:
        print("out of date: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
