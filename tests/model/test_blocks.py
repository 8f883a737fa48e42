"""The markdown scanner's process-wide state: the collector pause across threads, and the bounded outline cache."""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Iterator

import pytest

from statefile.model import blocks
from statefile.model.blocks import outline, scan_blocks


@pytest.fixture
def collecting() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_stays_off_until_the_last_parse_ends_and_then_comes_back(
    collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads parsing at once (the MCP server's workers): the first to finish must not turn the collector
    back on under the other, and once both are done it is on again, as it was."""
    md = blocks._parser(False)
    real_parse = md.block.parse
    inside = {"a": threading.Event(), "b": threading.Event()}
    release = {"a": threading.Event(), "b": threading.Event()}
    seen: dict[str, bool] = {}

    def parse(src: str, *args: object) -> None:
        who = threading.current_thread().name
        inside[who].set()
        assert release[who].wait(10)
        seen[who] = gc.isenabled()
        real_parse(src, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(md.block, "parse", parse)
    threads = {name: threading.Thread(target=scan_blocks, args=("# t\n",), name=name) for name in ("a", "b")}
    threads["a"].start()
    assert inside["a"].wait(10)
    threads["b"].start()
    assert inside["b"].wait(10)
    release["a"].set()
    threads["a"].join(10)
    assert not gc.isenabled()  # b is still parsing
    release["b"].set()
    threads["b"].join(10)
    assert seen == {"a": False, "b": False}
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        scan_blocks("# t\n\ntext\n")
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_the_outline_cache_is_bounded_by_the_size_of_the_texts_it_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    cache: OrderedDict[tuple[str, bool], object] = OrderedDict()
    monkeypatch.setattr(blocks, "_outlines", cache)
    monkeypatch.setattr(blocks, "_cached_chars", 0)
    monkeypatch.setattr(blocks, "MAX_CACHED_CHARS", 10_000)
    monkeypatch.setattr(blocks, "MAX_CACHED_TEXT", 4_000)
    texts = [f"- item {n}\n" + "x" * 990 + "\n" for n in range(50)]
    for text in texts:
        assert outline(text) == blocks._outline(text, True)
    assert sum(len(text) for text, _ in cache) == blocks._cached_chars <= 10_000
    assert (texts[-1], True) in cache and (texts[0], True) not in cache
    big = "para\n" * 1_000
    assert outline(big) and (big, True) not in cache  # too long to keep: parsed, not held
