"""The tests themselves type-check: mypy over tests/ with relaxed settings, so a test cannot call the API wrongly.

Relaxed means: test functions need no annotations (though most have them), but the bodies are checked
(``check_untyped_defs``), ``None`` is never silently a ``str`` (``strict_optional``), and comparisons between
unrelated types are errors (``strict_equality``).  The package itself is checked strictly by ``mypy`` with the
settings in pyproject.toml; here its modules are only followed (``follow_imports = silent``), which keeps the run to
a few seconds.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # mypy over every test file: tens of seconds

TESTS = Path(__file__).resolve().parent
CONFIG = """\
[mypy]
python_version = 3.10
mypy_path = {tests}:{benchmarks}
check_untyped_defs = True
strict_optional = True
strict_equality = True
no_implicit_optional = True
warn_redundant_casts = True
incremental = False
[mypy-statefile.*]
follow_imports = silent
# The test extras carry no stub packages (types-PyYAML is a dev extra): a fresh clone's run must pass too.
[mypy-frontmatter.*,git.*,yaml.*]
ignore_missing_imports = True
"""


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="needs mypy (in the test extras)")
def test_the_tests_type_check(tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text(CONFIG.format(tests=TESTS, benchmarks=TESTS.parent / "benchmarks"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), str(TESTS)],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
