"""Small pure helpers on raw text: line splitting that keeps every byte, newline style, UTF-8 sizes."""

from __future__ import annotations

import re

# Markdown's line ends only (str.splitlines() also splits on \x0b, \u2028 …, unlike markdown-it's token maps).
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines, each keeping its own line ending; ``"".join(result) == text``."""
    return _LINE_RE.findall(text)


def line_body(line: str) -> str:
    """The line without its line ending."""
    return line.rstrip("\r\n")


def line_ending(line: str) -> str:
    """The line ending of ``line`` ("" for a last line without one)."""
    return line[len(line.rstrip("\r\n")) :]


def one_line(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space (a newline in a field would start a bullet)."""
    return " ".join(text.split())


def detect_newline(text: str) -> str:
    """The first line ending used in ``text``, or "\\n" when there is none; new lines are written in it."""
    match = _NEWLINE_RE.search(text)
    return match.group(0) if match else "\n"


def encode(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates from undecodable input (surrogateescape) become their bytes again."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that did not come from surrogateescape ("\ud800"): keep it visible
        return text.encode("utf-8", "surrogatepass")


def utf8_size(text: str) -> int:
    """Bytes ``text`` takes on disk as UTF-8."""
    return len(text) if text.isascii() else len(encode(text))


ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, ``…`` marking the cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:/·—–-" + ELLIPSIS) + ELLIPSIS  # never "……" when the text was already cut
