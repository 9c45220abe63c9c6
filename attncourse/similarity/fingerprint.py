"""Fingerprints of one answer cell: normalised tokens, k-gram hashes, winnowing (as MOSS).

Code is normalised for what copying hides before it is hashed:

* formatting and comments: Python's own tokenizer, keeping no comment, blank line,
  indentation or line break inside brackets (a ``;`` counts as a line break, a trailing
  comma before a closing bracket and the parentheses around a tuple are dropped);
* identifier names: every name becomes ``V`` but the modules and names imported (in the
  cell or in the release: ``torch``, ``np``), builtins, keyword arguments (``dim=``) and
  attributes read (``.softmax``, ``.shape``), which a copier has no reason to change; an
  attribute the cell assigns (``self.w = …``) becomes ``V`` too. A name is renamed the
  same wherever it is, so the instructor's code pasted into an answer matches the
  release's;
* literals: numbers become ``N``, strings ``S``;
* dead code: string statements (docstrings), ``pass`` and ``if``/``while`` blocks whose
  test is a false constant are left out;
* order of independent definitions: each run of consecutive function, class and import
  statements (at the top level and in a class body) is sorted by its normalised text.

Written (Markdown) answers are lower-cased words (letters and digits; punctuation,
Markdown and LaTeX markup dropped), hashed as shingles of ``TEXT_SHINGLE`` words.

Every token remembers its line in the cell, so a shared fingerprint points back at the
lines of both students' cells that share it. Hashes are BLAKE2b, the same on every run
(Python's ``hash`` of a string is not).
"""

import ast
import builtins
import hashlib
import keyword
import re
import tokenize
from dataclasses import dataclass

from attncourse.integrity.scanner import _tokens_until_error as tokens_until_error

CODE_K = 8  # tokens per k-gram (calibrated: attncourse.similarity.compare)
CODE_WINDOW = 3  # winnowing window: a shared run of CODE_K + CODE_WINDOW - 1 tokens is always seen
TEXT_SHINGLE = 5  # words per shingle of a written answer

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
_CLOSING = {")", "]", "}"}
_MAGIC = re.compile(r"^\s*[%!]")
_WORD = re.compile(r"[a-z0-9]+")
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Token:
    """A normalised token and the line (1-based) of the cell it came from."""

    text: str
    line: int


def _position(node, start=True):
    if start:
        first = min([node, *getattr(node, "decorator_list", [])], key=lambda n: n.lineno)
        return (first.lineno, first.col_offset)
    return (node.end_lineno, node.end_col_offset)


def _assigned_attributes(tree):
    """The attribute names the code assigns or deletes (``self.w = …``)."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load)
    }


def _false_constant(test):
    return isinstance(test, ast.Constant) and not test.value


def _dead(tree):
    """Position ranges of the dead code left out: string statements, pass, if/while False."""
    ranges = []
    for node in ast.walk(tree):
        dead = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            or isinstance(node, ast.Pass)
            or isinstance(node, (ast.If, ast.While))
            and _false_constant(node.test)
            and not node.orelse
        )
        if dead:
            ranges.append((_position(node), _position(node, start=False)))
    return ranges


def _tuple_parentheses(tree):
    """Positions of the brackets around tuples (``return (a, b)`` is ``return a, b``)."""
    out = set()
    for node in ast.walk(tree):
        start = (node.lineno, node.col_offset) if isinstance(node, ast.Tuple) else None
        if start and (not node.elts or (node.elts[0].lineno, node.elts[0].col_offset) != start):
            out.add((node.lineno, node.col_offset))
            out.add((node.end_lineno, node.end_col_offset - 1))
    return out


def _normalise(raw, kept, attributes, keywords=frozenset()):
    """(position, Token) of every kept token: names but ``kept`` and the ``attributes`` the
    cell assigns renamed (not keyword arguments at ``keywords``), literals replaced."""
    out = []
    previous = None
    for tok in raw:
        if tok.type in _DROPPED or tok.type == tokenize.ENDMARKER:
            continue
        text = tok.string
        if tok.type == tokenize.NAME and not keyword.iskeyword(text):
            if previous == ".":
                text = "V" if text in attributes else text
            elif text not in kept and tok.start not in keywords:
                text = "V"
        elif tok.type == tokenize.NUMBER:
            text = "N"
        elif tok.type == tokenize.STRING:
            text = "S"
            if previous == "S":
                continue  # implicitly concatenated strings are one literal
        elif tok.type == tokenize.NEWLINE or text == ";":
            text = "\n"
            if previous in ("\n", None):
                continue
        out.append((tok.start, Token(text, tok.start[0])))
        previous = text
    return [
        item
        for i, item in enumerate(out)
        if not (item[1].text == "," and i + 1 < len(out) and out[i + 1][1].text in _CLOSING)
    ]


def _inside(position, ranges):
    return any(start <= position < end for start, end in ranges)


def _ordered(body, tokens):
    """The tokens of the statements ``body``, each run of definitions sorted by its text."""
    units = []
    for stmt in body:
        start, end = _position(stmt), _position(stmt, start=False)
        mine = [t for t in tokens if start <= t[0] < end]
        if isinstance(stmt, ast.ClassDef) and stmt.body:
            first = _position(stmt.body[0])
            header = [t for t in mine if t[0] < first]
            mine = header + _ordered(stmt.body, [t for t in mine if t[0] >= first])
        units.append((isinstance(stmt, _DEFINITIONS), mine))
    out, run = [], []
    for is_definition, unit in units + [(False, [])]:
        if is_definition:
            run.append(unit)
            continue
        out += [t for unit in sorted(run, key=lambda u: [t[1].text for t in u]) for t in unit]
        run = []
        out += unit
    return out


def _parse(source):
    """(``source`` without IPython magic and shell lines, its syntax tree or None)."""
    source = "\n".join("" if _MAGIC.match(line) else line for line in source.split("\n"))
    try:
        return source, ast.parse(source)
    except SyntaxError:
        return source, None


def imported(tree) -> set[str]:
    """The names import statements bind in ``tree`` (modules and what is taken from them)."""
    return {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }


def code_tokens(source: str, modules: frozenset = frozenset()) -> list[Token]:
    """The normalised tokens of a code cell (IPython magics and shell lines left out).

    ``modules``: names imported elsewhere (the release's first cell), kept like builtins."""
    source, tree = _parse(source)
    raw = tokens_until_error(source)
    if tree is None:
        return [token for _, token in _normalise(raw, _BUILTINS | modules, set())]
    attributes = _assigned_attributes(tree)
    kept = _BUILTINS | modules | imported(tree)
    keywords = {
        (node.lineno, node.col_offset)
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg
    }
    dead = _dead(tree)
    brackets = _tuple_parentheses(tree)
    tokens = [
        t
        for t in _normalise(raw, kept, attributes, keywords)
        if not _inside(t[0], dead) and not (t[1].text in "()" and t[0] in brackets)
    ]
    out = []
    for _, token in _ordered(tree.body, tokens):
        if token.text != "\n" or (out and out[-1].text != "\n"):
            out.append(token)  # one line break where dead statements were left out
    return out


def text_tokens(source: str) -> list[Token]:
    """The words of a written answer, lower-cased, without punctuation or markup."""
    return [
        Token(word, number)
        for number, line in enumerate(source.lower().split("\n"), start=1)
        for word in _WORD.findall(line)
    ]


def _hash(texts):
    digest = hashlib.blake2b("\x1f".join(texts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def kgrams(tokens: list[Token], k: int) -> list[tuple[int, int, int]]:
    """(hash, first line, last line) of every run of ``k`` tokens (one for a shorter cell)."""
    if not tokens:
        return []
    k = min(k, len(tokens))
    return [
        (_hash([t.text for t in tokens[i : i + k]]), tokens[i].line, tokens[i + k - 1].line)
        for i in range(len(tokens) - k + 1)
    ]


def winnow(grams: list[tuple[int, int, int]], window: int) -> list[tuple[int, int, int]]:
    """The k-grams winnowing selects: the smallest hash of every ``window`` consecutive
    k-grams (the rightmost on ties), each position once (Schleimer, Wilkerson, Aiken 2003)."""
    if len(grams) <= window:
        return [min(grams, key=lambda g: g[0])] if grams else []
    chosen = {}
    for i in range(len(grams) - window + 1):
        lowest = min(range(i, i + window), key=lambda j: (grams[j][0], -j))
        chosen[lowest] = grams[lowest]
    return [chosen[i] for i in sorted(chosen)]


def fingerprints(tokens: list[Token], k: int, window: int | None) -> dict[int, list]:
    """hash -> [(first line, last line), …] of the selected k-grams (all without a window)."""
    grams = kgrams(tokens, k)
    out = {}
    for h, first, last in winnow(grams, window) if window else grams:
        out.setdefault(h, []).append((first, last))
    return out


def code_fingerprints(
    source: str, k: int = CODE_K, window: int = CODE_WINDOW, modules: frozenset = frozenset()
) -> dict:
    """The winnowed fingerprints of a code cell."""
    return fingerprints(code_tokens(source, modules), k, window)


def text_fingerprints(source: str, k: int = TEXT_SHINGLE) -> dict:
    """The word shingles of a written answer (every one: written answers are short)."""
    return fingerprints(text_tokens(source), k, None)


def imported_names(source: str) -> set[str]:
    """The names the import statements of a code cell bind (none when it does not parse)."""
    tree = _parse(source)[1]
    return imported(tree) if tree is not None else set()
