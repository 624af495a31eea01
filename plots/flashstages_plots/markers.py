"""The doc markers: finding them in a text, rendering what they stand for, and saying what is stale.

Two kinds of marker, written as HTML comments so that markdown hides them:

    <!-- results:NAME:begin -->                 a block: the lines between the pair are tables.py's
    <!-- results:NAME:end -->                   render_block(NAME)
    <!-- value: EXPR | FORMAT -->N<!-- /value -->   a number in prose: N is EXPR's value, formatted

EXPR is arithmetic (numbers, + - * /, unary minus, parentheses, max(…), min(…)) over the terms
``[NAME]`` (a benchmark's TFLOPS), ``[NAME].FIELD`` (``VALUE_FIELDS``), ``[NAME@FILE]`` (that file's
measurement) and ``{CONTEXT_KEY}``; nothing else is evaluated. Markers inside code fences, and in
markdown inside code spans, are examples and are left alone. ``render_text`` returns a file's text as
the results say it should read and the ``Stale`` items that differ; every bad marker is an error naming
the file, the line and the marker.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from .results import Results, ResultsError, context_number, natural, parse_name
from .series import MIB
from .tables import render_block


# ---------------------------------------------------------------------------------------------
# Finding markers: what is an example (code fences, code spans), which line
# ---------------------------------------------------------------------------------------------

BEGIN_MARKER = re.compile(r"^[ \t]*<!-- results:(\S+):begin -->[ \t]*$", re.MULTILINE)
FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
# A markdown code span: a run of backticks, then the same run again on the same line.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)[^\n]*?(?<!`)\1(?!`)")


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges inside ``` / ~~~ code fences, where markers are only examples."""
    spans, start = [], None
    for m in FENCE.finditer(text):
        if start is None:
            start = m.start()
        else:
            spans.append((start, m.end()))
            start = None
    if start is not None:
        spans.append((start, len(text)))
    return spans


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of markdown `code spans`: a marker quoted in one is an example."""
    return [(m.start(), m.end()) for m in CODE_SPAN.finditer(text)]


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= position < b for a, b in spans)


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


# ---------------------------------------------------------------------------------------------
# What a check reports, and what is wrong with a marker
# ---------------------------------------------------------------------------------------------

@dataclass
class Stale:
    """A generated block or number that differs from what the results give."""

    line: int
    text: str


class MarkerError(Exception):
    """What is wrong with one value marker; the caller adds the file, the line and the marker."""


# ---------------------------------------------------------------------------------------------
# Value markers: the terms and the arithmetic of EXPR
# ---------------------------------------------------------------------------------------------

VALUE_TOKEN = re.compile(r"<!--[ \t]*value[ \t]*:|<!--[ \t]*/[ \t]*value[ \t]*-->")
VALUE_HEAD = re.compile(r"<!--[ \t]*value[ \t]*:(?P<body>(?:(?!-->)[^\n])*)-->")
VALUE_TAIL = re.compile(r"<!--[ \t]*/[ \t]*value[ \t]*-->")
# Terms are cut out of the expression before it is parsed, so '/' and ':' inside a benchmark name
# never reach the parser: [NAME], [NAME].FIELD, {CONTEXT_KEY}.
VALUE_TERM = re.compile(r"\[(?P<name>[^\[\]\n]*)\](?:\.(?P<field>[A-Za-z_][A-Za-z0-9_]*))?"
                        r"|\{(?P<key>[^{}\n]*)\}")
PLACEHOLDER = "_term"

VALUE_FIELDS = {
    "tflops": ("TFLOPS counter (TOPS for int8)", lambda r: r.tflops),
    "ms": ("time", lambda r: r.time_us / 1e3),
    "us": ("time", lambda r: r.time_us),
    "gbps": ("GB/s counter", lambda r: r.gbps),
    "extra_mib": ("extra_bytes counter", lambda r: None if r.extra_bytes is None else r.extra_bytes / MIB),
    "per_sm_clk": ("per_sm_clk counter", lambda r: r.per_sm_clk),
    "gops": ("Gop/s counter", lambda r: r.gops),
}
ALLOWED = "numbers, + - * /, unary minus, parentheses, max(…), min(…), [NAME], [NAME].FIELD and {CONTEXT_KEY}"


def _name_term(name: str, field_name: str, results: Results) -> float:
    if field_name not in VALUE_FIELDS:
        raise MarkerError(f"unknown field .{field_name} (known: "
                          + ", ".join(f".{f}" for f in VALUE_FIELDS) + ")")
    name, at, source = name.partition("@")  # [NAME@stage07_gemm.json]: that file's measurement
    name, source = name.strip(), source.strip() if at else None
    if not name:
        raise MarkerError("an empty name []")
    if source is not None and source not in results.contexts:
        raise MarkerError(f"no file {source!r} in {results.where()} (known: "
                          + ", ".join(sorted(results.contexts, key=natural)) + ")")
    try:
        wanted = parse_name(name)
    except ValueError as err:
        raise MarkerError(str(err)) from None
    run = results.find(wanted, source)
    if run is None:
        close = difflib.get_close_matches(name, [r.plain for r in results.runs], n=3, cutoff=0.75)
        hint = ("; did you mean " + " or ".join(f"[{c}]" for c in close) + "?") if close else ""
        raise MarkerError(f"no benchmark [{name}] in {source or results.where()}{hint}")
    what, get = VALUE_FIELDS[field_name]
    value = get(run)
    if value is None:
        raise MarkerError(f"[{name}] ({run.source}) has no {what}, which .{field_name} reads")
    return value


def _context_term(key: str, results: Results) -> float:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise MarkerError(f"{{{key}}} is not a context key name")
    try:
        value = context_number(results, key)
    except ResultsError as err:
        raise MarkerError(str(err)) from None
    if value is None:
        keys = sorted({k for c in results.contexts.values() for k in c})
        close = difflib.get_close_matches(key, keys, n=3)
        hint = ("; did you mean " + " or ".join(f"{{{c}}}" for c in close) + "?") if close else ""
        raise MarkerError(f"no context key {{{key}}} in {results.where()}{hint}")
    return value


BINARY_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
# max(a, b, …) and min(…): "the best version of a stage against a peer" in a table cell, where
# which version is best may change from one run to the next.
FUNCTIONS = {"max": max, "min": min}


def evaluate_expression(expr: str, results: Results) -> float:
    """The value of a marker's EXPR. Terms are looked up first and replaced by placeholders; the
    rest must parse (Python's ast) as numbers joined by + - * /, unary minus, parentheses, and
    max(…) or min(…) of two or more of those."""
    if PLACEHOLDER in VALUE_TERM.sub("", expr):
        raise MarkerError(f"'{PLACEHOLDER}' is not allowed: only {ALLOWED}")
    values: dict[str, float] = {}
    spelled: dict[str, str] = {}

    def substitute(m: re.Match) -> str:
        placeholder = f"{PLACEHOLDER}{len(values)}"
        if m.group("key") is not None:
            values[placeholder] = _context_term(m.group("key").strip(), results)
        else:
            values[placeholder] = _name_term(m.group("name").strip(), m.group("field") or "tflops", results)
        spelled[placeholder] = m.group(0)
        return f" {placeholder} "

    code = VALUE_TERM.sub(substitute, expr)

    def show(node) -> str:
        text = ast.unparse(node)
        for placeholder in sorted(spelled, key=len, reverse=True):
            text = text.replace(placeholder, spelled[placeholder])
        return text

    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        raise MarkerError(f"cannot read '{expr}' as arithmetic: only {ALLOWED}") from None

    def value_of(node) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value_of(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPS:
            left, right = value_of(node.left), value_of(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise MarkerError(f"division by zero: {show(node.right)} is 0")
            return BINARY_OPS[type(node.op)](left, right)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
                and len(node.args) >= 2 and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return FUNCTIONS[node.func.id](value_of(a) for a in node.args)
        raise MarkerError(f"'{show(node)}' is not allowed: only {ALLOWED}")

    return value_of(tree.body)


def render_value(body: str, results: Results) -> tuple[str, str]:
    """(EXPR, the formatted number) for the text between 'value:' and '-->'."""
    expr, bar, spec = body.rpartition("|")
    if expr.endswith("\\"):  # '\|': the pipe escaped, as a markdown table cell needs it
        expr = expr[:-1]
    expr, spec = expr.strip(), spec.strip()
    if not bar:
        raise MarkerError("no '| FORMAT' after the expression (e.g. '<!-- value: [NAME] | .1f -->')")
    if not expr:
        raise MarkerError("no expression before '|'")
    if not spec:
        raise MarkerError("no format after '|' (e.g. .0f, .2f, .3g, .0%)")
    value = evaluate_expression(expr, results)
    try:
        return expr, format(value, spec)
    except (ValueError, TypeError) as err:
        raise MarkerError(f"format '{spec}' does not apply to a number ({err})") from None


# ---------------------------------------------------------------------------------------------
# Rewriting a text: value markers first (they keep line numbers), then blocks
# ---------------------------------------------------------------------------------------------

def rewrite_values(text: str, results: Results, where: str, markdown: bool) -> tuple[str, list[Stale]]:
    """Replace RENDERED in every '<!-- value: EXPR | FORMAT -->RENDERED<!-- /value -->' outside code
    fences (and, in markdown, outside `code spans`). The whole marker lies on one line; nothing
    else changes, so line numbers stay as they were. Every bad marker is reported, then raised."""
    skip = _fenced_spans(text) + (_code_spans(text) if markdown else [])
    errors: list[str] = []
    stale: list[Stale] = []
    pieces: list[str] = []
    pos = search = 0
    while True:
        token = VALUE_TOKEN.search(text, search)
        if token is None:
            break
        search = token.end()
        if _inside(token.start(), skip):
            continue
        line = _line_of(text, token.start())
        if VALUE_TAIL.match(token.group(0)):
            errors.append(f"{where}:{line}: '{token.group(0)}' closes no '<!-- value: … -->'")
            continue
        line_end = text.find("\n", token.start())
        line_end = len(text) if line_end < 0 else line_end
        head = VALUE_HEAD.match(text, token.start())
        if head is None:
            errors.append(f"{where}:{line}: '{text[token.start():line_end].rstrip()}': "
                          "the marker has no '-->' on its line")
            continue
        marker = head.group(0)
        tail = VALUE_TAIL.search(text, head.end(), line_end)
        if tail is None:
            errors.append(f"{where}:{line}: {marker}: no '<!-- /value -->' after it on the same line")
            search = head.end()
            continue
        old = text[head.end():tail.start()]
        search = tail.end()
        if "<!--" in old:
            errors.append(f"{where}:{line}: {marker}: another comment starts before its '<!-- /value -->'")
            continue
        try:
            expr, new = render_value(head.group("body"), results)
        except MarkerError as err:
            errors.append(f"{where}:{line}: {marker}: {err}")
            continue
        if new != old:
            stale.append(Stale(line, f"value {expr} says {old if old.strip() else '(nothing)'}, "
                                     f"the results give {new}"))
            pieces += [text[pos:head.end()], new]
            pos = tail.start()
    if errors:
        raise ResultsError("\n".join(errors))
    pieces.append(text[pos:])
    return "".join(pieces), stale


def rewrite_blocks(text: str, results: Results, where: str) -> tuple[str, list[Stale]]:
    """Replace what lies between each begin/end marker pair; all else is kept byte for byte."""
    newline = "\r\n" if "\r\n" in text else "\n"
    fenced = _fenced_spans(text)
    pieces, pos = [], 0
    stale: list[Stale] = []
    for begin in BEGIN_MARKER.finditer(text):
        if begin.start() < pos or _inside(begin.start(), fenced):
            continue
        block = begin.group(1)
        line = _line_of(text, begin.start())
        end = re.compile(r"^[ \t]*<!-- results:" + re.escape(block) + r":end -->[ \t]*$", re.MULTILINE)
        end_match = end.search(text, begin.end())
        if end_match is None:
            raise ResultsError(f"{where}:{line}: '<!-- results:{block}:begin -->' has no matching end marker")
        try:
            body = render_block(block, results).replace("\n", newline)
        except ResultsError as err:
            raise ResultsError(f"{where}:{line}: {err}") from None
        new = newline + body + newline
        if text[begin.end():end_match.start()] != new:
            stale.append(Stale(line, f"block results:{block} differs from what the results give"))
        pieces += [text[pos:begin.end()], new]
        pos = end_match.start()
    pieces.append(text[pos:])
    return "".join(pieces), stale


def is_markdown(path: Path | str) -> bool:
    return Path(path).suffix.lower() in (".md", ".markdown")


def render_text(text: str, results: Results, where: str, markdown: bool = True) -> tuple[str, list[Stale]]:
    """The file as the results say it should read, and what differs. Value markers are rendered
    first (they keep line numbers), then the blocks; every error in the file is reported at once."""
    if "<!--" not in text:
        return text, []
    errors = []
    try:
        text_values, stale_values = rewrite_values(text, results, where, markdown)
    except ResultsError as err:
        errors.append(str(err))
        text_values, stale_values = text, []
    try:
        new, stale_blocks = rewrite_blocks(text_values, results, where)
    except ResultsError as err:
        errors.append(str(err))
    if errors:
        raise ResultsError("\n".join(errors))
    return new, sorted(stale_values + stale_blocks, key=lambda s: s.line)
