"""A validator for Mermaid ``xychart-beta`` diagrams, written from Mermaid's documented grammar for the chart type.

Sources: the XY chart syntax page (mermaid.js.org/syntax/xyChart) and the productions of its parser
(``src/diagrams/xychart/parser/xychart.jison``)::

    start       : eol* XYCHART CHART_ORIENTATION? (eol statement?)*
    statement   : 'title' text
                | 'x-axis' ( text | text band | text range | band | range )
                | 'y-axis' ( text | text range | range )
                | ('line' | 'bar') text? data
                | 'accTitle' ':' rest-of-line | 'accDescr' ':' rest-of-line
    band        : '[' text (',' text)* ']'
    range       : NUMBER '-->' NUMBER
    data        : '[' NUMBER (',' NUMBER)* ']'
    text        : STR ("…", no '"' inside) | word (letters, digits, & + = * . _ -)
    NUMBER      : [+-]? (digits ('.' digits)? | '.' digits)
    comment     : a line starting with '%%'

On top of the grammar it checks what makes a chart *draw what it says* (the parser accepts these, the renderer then
misplaces points): every data series has as many values as a categorical x-axis has categories, and a y range
runs from a lower to a higher number.  ``validate`` returns the problems found, ``[]`` for a valid diagram.
"""

from __future__ import annotations

import re

_NUMBER = r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)"
_WORD = r"[A-Za-z0-9&+=*._\-]+"
_STR = r'"[^"\n]*"'
_TEXT = rf"(?:{_STR}|{_WORD})"
_TOKEN = re.compile(rf"\s*({_STR}|-->|{_NUMBER}(?![A-Za-z0-9&+=*._\-])|{_WORD}|[\[\],:])")


class _Tokens:
    def __init__(self, text: str) -> None:
        self.items: list[str] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match or match.end() == pos:
                raise ValueError(f"unexpected text {text[pos:].strip()[:20]!r}")
            self.items.append(match.group(1))
            pos = match.end()
        self.at = 0

    def peek(self) -> str | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end of line")
        self.at += 1
        return token

    def expect(self, token: str) -> None:
        got = self.take()
        if got != token:
            raise ValueError(f"expected {token!r}, got {got!r}")

    def done(self) -> None:
        if self.peek() is not None:
            raise ValueError(f"unexpected {self.peek()!r} at the end of the line")


def _is_number(token: str | None) -> bool:
    return token is not None and re.fullmatch(_NUMBER, token) is not None


def _is_text(token: str | None) -> bool:
    return token is not None and re.fullmatch(_TEXT, token) is not None and token != "-->"


def _numbers(tokens: _Tokens) -> list[float]:
    tokens.expect("[")
    values = []
    while True:
        token = tokens.take()
        if not _is_number(token):
            raise ValueError(f"expected a number, got {token!r}")
        values.append(float(token))
        separator = tokens.take()
        if separator == "]":
            return values
        if separator != ",":
            raise ValueError(f"expected ',' or ']', got {separator!r}")


def _band(tokens: _Tokens) -> list[str]:
    tokens.expect("[")
    names = []
    while True:
        token = tokens.take()
        if not _is_text(token):
            raise ValueError(f"expected a category, got {token!r}")
        names.append(token)
        separator = tokens.take()
        if separator == "]":
            return names
        if separator != ",":
            raise ValueError(f"expected ',' or ']', got {separator!r}")


def _range(tokens: _Tokens) -> tuple[float, float]:
    low = tokens.take()
    tokens.expect("-->")
    high = tokens.take()
    if not (_is_number(low) and _is_number(high)):
        raise ValueError(f"a range is NUMBER --> NUMBER, got {low!r} --> {high!r}")
    return float(low), float(high)


def validate(diagram: str) -> list[str]:
    """Problems with ``diagram`` as an ``xychart-beta`` (see the module docstring); ``[]`` when it is valid."""
    problems: list[str] = []
    lines = [(n, line) for n, line in enumerate(diagram.splitlines(), 1)]
    body = [(n, line.strip()) for n, line in lines if line.strip() and not line.strip().startswith("%%")]
    if not body:
        return ["empty diagram"]
    first_no, first = body[0]
    head = first.split()
    if head[0] != "xychart-beta" or len(head) > 2 or (len(head) == 2 and head[1] not in ("vertical", "horizontal")):
        return [f"line {first_no}: a diagram starts with 'xychart-beta' and an optional orientation"]
    categories: int | None = None
    series: list[tuple[int, int]] = []
    for n, line in body[1:]:
        keyword, _, rest = line.partition(" ")
        try:
            if keyword in ("accTitle", "accDescr") or keyword.startswith(("accTitle:", "accDescr:")):
                if ":" not in line:
                    raise ValueError(f"{keyword} needs ':'")
                continue
            tokens = _Tokens(rest)
            if keyword == "title":
                if not _is_text(tokens.take()):
                    raise ValueError("title needs a word or a quoted string")
            elif keyword == "x-axis":
                if _is_text(tokens.peek()) and not _is_number(tokens.peek()):
                    tokens.take()
                elif _is_number(tokens.peek()) and tokens.items[tokens.at + 1 : tokens.at + 2] != ["-->"]:
                    tokens.take()  # a numeric title
                if tokens.peek() == "[":
                    categories = len(_band(tokens))
                elif tokens.peek() is not None:
                    low, high = _range(tokens)
                    if not low < high:
                        raise ValueError(f"x range {low} --> {high} does not increase")
            elif keyword == "y-axis":
                if (
                    tokens.peek() is not None
                    and not (_is_number(tokens.peek()) and tokens.items[tokens.at + 1 : tokens.at + 2] == ["-->"])
                    and not _is_text(tokens.take())
                ):
                    raise ValueError("y-axis title must be a word or a quoted string")
                if tokens.peek() is not None:
                    low, high = _range(tokens)
                    if not low < high:
                        raise ValueError(f"y range {low} --> {high} does not increase")
            elif keyword in ("line", "bar"):
                if tokens.peek() != "[" and not _is_text(tokens.take()):
                    raise ValueError(f"{keyword} title must be a word or a quoted string")
                series.append((n, len(_numbers(tokens))))
            else:
                raise ValueError(f"unknown statement {keyword!r}")
            tokens.done()
        except ValueError as exc:
            problems.append(f"line {n}: {exc}")
    if not series:
        problems.append("no line or bar series")
    if categories is not None:
        for n, count in series:
            if count != categories:
                problems.append(f"line {n}: {count} values for {categories} x-axis categories")
    return problems
