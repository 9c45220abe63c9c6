"""Hostile notebooks that cost the grader more than an honest one: each a complete solution
notebook of an assignment with one costly thing added (``make price``, the tests of the limits).
"""

import base64
import copy

import nbformat
from nbformat.notebooknode import NotebookNode


def many_cells(nb: NotebookNode, cells: int = 10_000) -> NotebookNode:
    """``cells`` tiny code cells added at the end."""
    out = copy.deepcopy(nb)
    out.cells += [nbformat.v4.new_code_cell(f"_x = {k}") for k in range(cells)]
    return out


def many_outputs(nb: NotebookNode, outputs: int = 200_000) -> NotebookNode:
    """One added cell that sends ``outputs`` tiny outputs, each a message of its own (with
    IPython's ``display``, which needs no import: an import would cost the rule-bound parts)."""
    out = copy.deepcopy(nb)
    source = f"for _i in range({outputs}):\n    display(_i)\n    print(_i, flush=True)\n"
    out.cells.append(nbformat.v4.new_code_cell(source))
    return out


def carried_outputs(nb: NotebookNode, cells: int = 4, outputs: int = 20_000) -> NotebookNode:
    """The first ``cells`` code cells carrying ``outputs`` one-character outputs each, just
    outside nbformat's schema (a stream without its name), as ``make fuzz`` drew them (about
    3.3 MB as JSON for 4 x 20,000): the grader never reads them, but nbformat's schema check
    would, one by one, and costs most on those it must explain."""
    out = copy.deepcopy(nb)
    code = [cell for cell in out.cells if cell.cell_type == "code"][:cells]
    for cell in code:
        cell.outputs = [nbformat.from_dict({"output_type": "stream", "text": "x"})] * outputs
    return out


def parse_bomb(nb: NotebookNode, cells: int = 60, cell_bytes: int = 45_000) -> NotebookNode:
    """Cells of large flat literals (about 3 syntax-tree nodes per 4 bytes) just under the
    source limit, one cell far over it, and one nested 5,000 deep in cell magics."""
    out = copy.deepcopy(nb)
    items = cell_bytes // 4
    flat = "_b = [" + "[1]," * items + "]\n"
    out.cells += [nbformat.v4.new_code_cell(flat) for _ in range(cells)]
    out.cells.append(nbformat.v4.new_code_cell("_c = [" + "[1]," * 250_000 + "]\n"))
    out.cells.append(nbformat.v4.new_code_cell("%%time\n" * 5_000 + "_d = 1\n"))
    return out


def attachment(nb: NotebookNode, megabytes: int = 50) -> NotebookNode:
    """A Markdown cell with a ``megabytes`` MB image attachment."""
    out = copy.deepcopy(nb)
    data = base64.b64encode(b"\0" * (megabytes * 2**20 * 3 // 4)).decode()
    cell = nbformat.v4.new_markdown_cell("![x](attachment:x.png)")
    cell["attachments"] = {"x.png": {"image/png": data}}
    out.cells.append(cell)
    return out


HOSTILE = {
    "10,000 cells": many_cells,
    "many tiny outputs": many_outputs,
    "80,000 outputs carried": carried_outputs,
    "rules parse bomb": parse_bomb,
    "50 MB attachment": attachment,
}
