"""Re-statements of gh-aw's and Autoloop's jobs, for hermetic end-to-end tests (pure Python + git, no network).

Each module is written from the observed behaviour documented in the team's gh-aw notes (file paths and line
numbers into github/gh-aw-actions v0.65.6 and githubnext/autoloop), never from their code:

- :mod:`.scheduler` — Autoloop's pre-step scheduler (``workflows/scripts/autoloop_scheduler.py``);
- :mod:`.clone` — Autoloop's "Clone repo-memory for scheduling" step and gh-aw's ``clone_repo_memory_branch.sh``;
- :mod:`.push_job` — gh-aw's ``push_repo_memory`` job (``setup/js/push_repo_memory.cjs``) with its glob filter;
- :mod:`.safe_outputs` — the safe-outputs MCP server's JSONL, the ingestion (``collect_ndjson_output.cjs``) with
  the custom-job input validation and the string sanitiser (``sanitize_content_core.cjs``);
- :mod:`.schema` — the documented schema of a custom safe-output job (``safe-outputs: jobs:``);
- :mod:`.component` — loading a shipped component and running its steps: ``run:`` scripts, and the artifact
  actions (upload-artifact / download-artifact v4+) against a per-run artifact store;
- :mod:`.workflow` — one scheduled run put together, with a simulated agent: the agent job's artifact upload
  (from Autoloop's compiled lock file) and the custom safe-output job as gh-aw's compiler lays it out.
"""
