"""Copies of a code answer disguised mechanically, the way a student hides copying.

Each disguise keeps the program's meaning (or, for literals, its shape) and is applied by
rules, never by hand, so the detection rate measured on them is reproducible:

* ``rename``: every name and attribute the cell binds gets another name (the names the
  release's stub defines, dunder methods and keyword arguments stay: the tests and the
  libraries call them);
* ``comments_literals``: every comment and string literal replaced, comments added;
* ``reorder``: every run of consecutive definitions (top level and class bodies) reversed;
* ``dead_code``: an unused assignment inserted at the top of every function body and at
  the end of the cell;
* ``reformat``: ``ast.unparse`` (one statement a line, its own quoting and parentheses,
  no comments);
* ``all``: all of them, in that order.
"""

import ast
import io
import keyword
import tokenize


def bound(tree):
    """(names the code binds, attribute names it assigns)."""
    names, attributes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            attributes.add(node.attr)
    return names, attributes


def _splice(source, edits):
    """``source`` with ``edits`` [((row, col), (row, col), new text)] applied."""
    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def offset(position):
        return starts[position[0] - 1] + position[1]

    for start, end, new in sorted(edits, key=lambda e: offset(e[0]), reverse=True):
        source = source[: offset(start)] + new + source[offset(end) :]
    return source


def _tokens(source):
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def rename(source, keep=frozenset()):
    tree = ast.parse(source)
    names, attributes = bound(tree)
    keep = set(keep) | {n for n in names | attributes if n.startswith("__")}
    keywords = {(n.lineno, n.col_offset) for n in ast.walk(tree) if isinstance(n, ast.keyword)}
    edits, previous = [], None
    for tok in _tokens(source):
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            pool = attributes if previous == "." else names
            if tok.string in pool and tok.string not in keep and tok.start not in keywords:
                edits.append((tok.start, tok.end, f"my_{tok.string.lower()}_v2"))
        previous = tok.string
    return _splice(source, edits)


def comments_literals(source, keep=frozenset()):
    edits = []
    for tok in _tokens(source):
        if tok.type == tokenize.COMMENT:
            edits.append((tok.start, tok.end, "# my own working"))
        elif tok.type == tokenize.STRING:
            edits.append((tok.start, tok.end, repr(f"text {len(tok.string)}")))
    return "# worked this out myself\n" + _splice(source, edits)


def _reversed_runs(body, lines):
    """The source lines of ``body``'s statements, runs of definitions reversed (recursing
    into class bodies), each statement with the comment and blank lines above it."""
    units, start = [], None
    for stmt in body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        above = first if start is None else start
        if isinstance(stmt, ast.ClassDef):
            text = lines[above - 1 : stmt.body[0].lineno - 1] + _reversed_runs(stmt.body, lines)
        else:
            text = lines[above - 1 : stmt.end_lineno]
        units.append((isinstance(stmt, (ast.FunctionDef, ast.ClassDef)), text))
        start = stmt.end_lineno + 1
    out, run = [], []
    for definition, text in units + [(False, [])]:
        if definition:
            run.append(text)
            continue
        out += [line for unit in reversed(run) for line in unit + [""]]
        run = []
        out += text
    return out


def reorder(source, keep=frozenset()):
    lines = source.split("\n")
    return "\n".join(_reversed_runs(ast.parse(source).body, lines))


def dead_code(source, keep=frozenset()):
    tree = ast.parse(source)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                first = node.body[1] if len(node.body) > 1 else first
            pad = " " * first.col_offset
            line = (first.lineno, 0)
            edits.append((line, line, f"{pad}unused_total = sum(range(3)) * 2 + 1\n"))
    out = _splice(source, edits)
    return out + "\n\nleftover_check = [k * k for k in range(4)]\n"


def reformat(source, keep=frozenset()):
    return ast.unparse(ast.parse(source))


DISGUISES = {
    "rename": rename,
    "comments_literals": comments_literals,
    "reorder": reorder,
    "dead_code": dead_code,
    "reformat": reformat,
}


def disguise(source, how, keep=frozenset()):
    """``source`` disguised by ``how`` (a name of DISGUISES, or ``all``)."""
    steps = list(DISGUISES) if how == "all" else [how]
    for step in steps:
        source = DISGUISES[step](source, keep)
    return source
