"""export_json/import_json: byte-identical round trips (corpus, undecodable bytes, hypothesis) and validation."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

import pytest
from conftest import all_corpus_files, examples, read_raw
from hypothesis import given, settings
from hypothesis import strategies as st

from statefile.errors import UsageError
from statefile.model.text import encode
from statefile.store.exchange import FORMAT, VERSION, check_path, dumps, export_json, import_json, loads


def corpus() -> dict[str, str]:
    files = {path.name: read_raw(path) for path in all_corpus_files()}
    files["archive/perf/0001.md"] = "# Archive: perf (part 1)\n\nold\r\nstuff\r"
    files["_shared.md"] = "# Shared lessons\n"
    return files


def round_trip(files: dict[str, str]) -> dict[str, str]:
    return import_json(loads(dumps(export_json(files, branch="memory/autoloop", commit="abc123"))))


def test_corpus_round_trip_is_byte_identical() -> None:
    files = corpus()
    back = round_trip(files)
    assert back.keys() == files.keys()
    for path, text in files.items():
        assert encode(back[path]) == encode(text), path
        assert back[path] == text


def test_schema_shape() -> None:
    data = export_json({"perf.md": "# hi\n", "bad.md": "caf\udce9"}, branch="memory/autoloop", commit=None)
    assert data["format"] == FORMAT and data["version"] == VERSION == 1
    assert data["branch"] == "memory/autoloop" and data["commit"] is None
    assert list(data["files"]) == ["bad.md", "perf.md"]
    assert data["files"]["perf.md"] == {"text": "# hi\n", "bytes": 5, "sha256": hashlib.sha256(b"# hi\n").hexdigest()}
    assert data["files"]["bad.md"]["base64"] == "Y2Fm6Q=="
    assert "text" not in data["files"]["bad.md"]
    # The JSON text is valid UTF-8 (no lone surrogates).
    dumps(data).encode("utf-8")


def test_undecodable_bytes_round_trip() -> None:
    raw = b"# x\r\n\xff\xfe caf\xe9 \xed\xa0\x80 \xf0\x9f\x93\x8c ok\n"
    text = raw.decode("utf-8", "surrogateescape")
    back = round_trip({"x.md": text})
    assert encode(back["x.md"]) == raw
    assert back["x.md"] == text


@settings(max_examples=examples(200))
@given(
    st.dictionaries(
        st.sampled_from(["a.md", "b.md", "_shared.md", "archive/a/0001.md", "archive/a/0002.md"]),
        st.binary(max_size=400) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
        max_size=5,
    )
)
def test_hypothesis_bytes_round_trip(blobs: dict[str, bytes]) -> None:
    files = {path: data.decode("utf-8", "surrogateescape") for path, data in blobs.items()}
    back = round_trip(files)
    assert {path: encode(text) for path, text in back.items()} == blobs


def exported() -> dict[str, Any]:
    return export_json({"perf.md": "# perf\n", "archive/perf/0001.md": "\udcff"}, branch="b", commit="c")


def broken(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(exported())
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="something"), "not a statefile export"),
        (lambda d: d.update(version=2), "newer than this statefile reads"),
        (lambda d: d.update(version="1"), "is not a number"),
        (lambda d: d.update(version=0), "not valid"),
        (lambda d: d.pop("files"), "no 'files' object"),
        (lambda d: d["files"]["perf.md"].update(text="# PERF\n"), "checksum mismatch"),
        (lambda d: d["files"]["perf.md"].update(sha256="xyz"), "malformed sha256"),
        (lambda d: d["files"]["perf.md"].pop("sha256"), "malformed sha256"),
        (lambda d: d["files"]["perf.md"].update(base64="AA=="), "exactly one of"),
        (lambda d: d["files"]["perf.md"].update(bytes=99), "does not match the recorded"),
        (lambda d: d["files"]["perf.md"].update(text=7), "not a string"),
        (lambda d: d["files"]["archive/perf/0001.md"].update(base64="!!"), "not valid base64"),
        (lambda d: d["files"].update({"x.md": "text"}), "not an object"),
        (lambda d: d["files"].update({"../x.md": d["files"]["perf.md"]}), re.escape("'..' segment")),
        (lambda d: d["files"].update({"/etc/x.md": d["files"]["perf.md"]}), "absolute path"),
        (lambda d: d["files"].update({"C:/x.md": d["files"]["perf.md"]}), "absolute path"),
        (lambda d: d["files"].update({"a\\b.md": d["files"]["perf.md"]}), "backslash"),
        (lambda d: d["files"].update({".git/config": d["files"]["perf.md"]}), "inside .git"),
        (lambda d: d["files"].update({"a//b.md": d["files"]["perf.md"]}), re.escape("empty, '.' or '..'")),
        (lambda d: d["files"].update({"a\nb.md": d["files"]["perf.md"]}), "control"),
        # Issue 15: a name no file system holds was accepted (and a folder import crashed writing it, exit 70).
        (lambda d: d["files"].update({"b" * 300 + ".md": d["files"]["perf.md"]}), "303 bytes long, more than the 255"),
        (lambda d: d["files"].update({"archive/" + "é" * 128 + "/0001.md": d["files"]["perf.md"]}), "256 bytes"),
    ],
)
def test_import_refuses_with_one_line_reason(mutate: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        import_json(broken(mutate))
    assert "\n" not in str(info.value)


def test_import_refuses_non_objects_and_bad_json() -> None:
    with pytest.raises(UsageError, match="must be an object"):
        import_json([1, 2])
    with pytest.raises(UsageError, match="not valid JSON"):
        loads("{not json")


def test_export_refuses_bad_paths_and_import_ignores_unknown_keys() -> None:
    with pytest.raises(UsageError, match=re.escape("'..' segment")):
        export_json({"../escape.md": "x"}, branch="b", commit=None)
    data = exported()
    data["exported_at"] = "2026-01-01"
    assert import_json(json.loads(json.dumps(data))) == {"perf.md": "# perf\n", "archive/perf/0001.md": "\udcff"}
    assert check_path("archive/perf/0001.md") == "archive/perf/0001.md"
