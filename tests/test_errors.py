"""The error kinds (statefile.errors): each exits with the code docs/exit-codes.md gives its kind of failure, one code
per kind, and a subclass keeps its parent's code unless it sets its own."""

from __future__ import annotations

import re

import pytest
from conftest import TESTS

from statefile import errors

EXIT_CODES_DOC = TESTS.parent / "docs" / "exit-codes.md"

# Every kind of failure, with the words its row of the table in docs/exit-codes.md begins with.
KINDS: dict[type[errors.StatefileError], str] = {
    errors.UsageError: "usage:",
    errors.NotFoundError: "not found:",
    errors.BudgetError: "over budget:",
    errors.ConflictError: "conflict:",
    errors.GitError: "git failed:",
    errors.InvalidDataError: "invalid data on the branch:",
    errors.EnvironmentFailure: "environment:",
    errors.InterruptedWrite: "interrupted (Ctrl-C)",
}


def documented_codes() -> dict[int, str]:
    """docs/exit-codes.md's table: code → meaning (each code on one row only)."""
    rows = re.findall(r"^\| (\d+) \| (.+?) \|$", EXIT_CODES_DOC.read_text(encoding="utf-8"), re.M)
    codes = {int(code): meaning for code, meaning in rows}
    assert len(codes) == len(rows) > 0, rows
    return codes


def error_kinds() -> list[type[errors.StatefileError]]:
    """The StatefileError subclasses statefile.errors defines."""
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.StatefileError) and value is not errors.StatefileError
    ]


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda kind: kind.__name__)
def test_each_error_kind_exits_with_the_documented_code(kind: type[errors.StatefileError]) -> None:
    meaning = documented_codes().get(kind.exit_code, "")
    assert meaning.startswith(KINDS[kind]), (kind.__name__, kind.exit_code, meaning)
    assert kind("why").exit_code == kind.exit_code


def test_error_kinds_and_exit_codes_are_one_to_one() -> None:
    """Every kind is in the table above (a new one must say which documented row it is), and no two share a code."""
    kinds = error_kinds()
    assert set(kinds) == set(KINDS)
    codes = [kind.exit_code for kind in kinds]
    assert len(set(codes)) == len(codes), {kind.__name__: kind.exit_code for kind in kinds}


def test_the_exit_code_constants_are_the_documented_table() -> None:
    """The EXIT_* constants and docs/exit-codes.md list the same codes, besides 0 (success), each once."""
    constants = {name: value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert len(set(constants.values())) == len(constants), constants
    documented = documented_codes()
    assert {0, *constants.values()} == set(documented)
    assert documented[0] == "success"
    assert documented[errors.EXIT_CHECK_FAILED].startswith("`check` found a problem")
    assert documented[errors.EXIT_INTERNAL].startswith("internal error")
    assert errors.StatefileError.exit_code == errors.EXIT_USAGE  # an error of no narrower kind is a usage error


def test_a_subclass_keeps_its_parents_code_unless_it_sets_one() -> None:
    class Narrower(errors.NotFoundError):
        pass

    class Own(errors.ConflictError, exit_code=99):
        pass

    assert Narrower.exit_code == errors.EXIT_NOT_FOUND
    assert Own.exit_code == 99
    assert errors.ConflictError.exit_code == errors.EXIT_CONFLICT  # the parent's code is left alone
    assert isinstance(Own("x"), errors.StatefileError)
