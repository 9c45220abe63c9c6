"""No notebook shows students a control character where text or LaTeX was meant.

A backslash command typed in an ordinary string turns into a control character: ``\\times``
in a Python string is a tab and ``imes``, ``\\frac`` a form feed, ``\\beta`` a backspace; in a
Markdown cell a tab pasted from such a string renders "2 imes 2". Every Markdown cell, and
every string constant of a code cell that holds LaTeX (a ``$``), of every assignment's source
and release notebook, must hold no character below U+0020 but the newline, nor U+007F.
"""

import ast

import nbformat
import pytest

from attncourse.course import ASSIGNMENTS, ROOT, notebook_path


def _bad(text):
    """The control characters of ``text`` (newline allowed): [(line, character)]."""
    return [
        (text.count("\n", 0, index) + 1, char)
        for index, char in enumerate(text)
        if (ord(char) < 0x20 and char != "\n") or char == "\x7f"
    ]


def _latex_strings(source):
    """The string constants of ``source`` that hold LaTeX (a ``$``); none if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "$" in node.value
    ]


def control_characters(nb, name):
    """One line per control character in ``nb``'s Markdown or its code cells' LaTeX strings."""
    found = []
    for index, cell in enumerate(nb.cells):
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or cell.cell_type
        if cell.cell_type == "markdown":
            texts = [cell.source]
        elif cell.cell_type == "code":
            texts = _latex_strings(cell.source)
        else:
            continue
        for text in texts:
            for line, char in _bad(text):
                found.append(
                    f"{name}, cell {index} ({where}), line {line} of its "
                    f"{'text' if cell.cell_type == 'markdown' else 'LaTeX string'}: "
                    f"{char!r} (U+{ord(char):04X}); a backslash command typed where a "
                    "tab or other control character ended up (\\t of \\times): restore it"
                )
    return found


@pytest.mark.parametrize("folder", ["source", "release"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_control_character_in_text_or_latex(assignment, folder):
    path = notebook_path(ROOT, folder, assignment)
    found = control_characters(nbformat.read(path, as_version=4), f"{folder}/{assignment}")
    assert not found, "\n".join(found)


def test_a_tab_in_markdown_or_in_a_latex_string_is_found_and_named():
    """The wrong answers: a tab in Markdown, \\theta typed in a plot label; the correct
    ones: newlines, a tab in a string without LaTeX, a raw LaTeX string."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("all $2 \times 2$ integer matrices\nnext line"),
        nbformat.v4.new_code_cell('plt.xlabel("$\\theta$ in radians")'),
        nbformat.v4.new_code_cell('print("a\\tb\\n")\nplt.title(r"$\\theta \\times 2$")'),
        nbformat.v4.new_markdown_cell("fine $\\frac{1}{2}$\nalso fine\x7f"),
    ]
    found = control_characters(nb, "demo")
    assert len(found) == 3, found
    assert found[0].startswith("demo, cell 0 (markdown), line 1 of its text: '\\t' (U+0009)")
    assert found[1].startswith("demo, cell 1 (code), line 1 of its LaTeX string: '\\t'")
    assert found[2].startswith("demo, cell 3 (markdown), line 2 of its text: '\\x7f'")
