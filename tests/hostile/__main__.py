"""``python tests/hostile``: the hostile run (see __init__.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hostile.suite import main

raise SystemExit(main())
