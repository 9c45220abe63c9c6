"""Small HTML pieces of the report: escaped tables, embedded figures, the page's style."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

# No script and nothing from elsewhere: the figures are inline PNGs, the style is inline.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

STYLE = """
body { font-family: sans-serif; max-width: 80em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; }
td.lo { background: #f8c9c4; } td.mid { background: #fbe7b5; } td.hi { background: #cfe8c6; }
td.none { color: #777; }
img { display: block; margin: 0.5em 0; max-width: 100%; }
p.note { color: #555; font-size: 0.9em; }
.sorts > .sorted { display: none; }
.sorts > .sorted:target { display: block; }
.sorts:not(:has(> .sorted:target)) > .sorted.default { display: block; }
"""


def esc(value: object) -> str:
    return html.escape(str(value))


class Cell:
    """A table cell with a class (``num``, ``lo``, ...) or raw HTML the report built itself."""

    def __init__(self, text: object, css: str = "", markup: bool = False):
        self.text, self.css, self.markup = text, css, markup

    def html(self) -> str:
        body = str(self.text) if self.markup else esc(self.text)
        css = f' class="{self.css}"' if self.css else ""
        return f"<td{css}>{body}</td>"


def table(
    header: Sequence[str], rows: Iterable[Sequence[object]], numeric: Iterable[int] = ()
) -> str:
    """An HTML table; columns ``numeric`` right-aligned; a :class:`Cell` keeps its own class."""
    numeric = set(numeric)
    out = ["<table>", "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = [
            v.html() if isinstance(v, Cell) else Cell(v, "num" if i in numeric else "").html()
            for i, v in enumerate(row)
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def figure(png: str, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{png}">'
