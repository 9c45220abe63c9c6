"""What a student's Markdown becomes on a grader's page: inert, complete, math as MathML.

Each rule has its honest case (kept) beside its hostile one (shown as text, never live).
"""

import re
from html.parser import HTMLParser

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import MarkdownWithMath

from attncourse.course import ROOT, assignments, notebook_path
from attncourse.mathml import tex_to_mathml
from attncourse.safemarkdown import SafeRenderer, clean, outside_link, render

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class Elements(HTMLParser):
    """(tag, attributes) of every element of a fragment, and its text."""

    def __init__(self, markup):
        super().__init__()
        self.elements, self.text = [], []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def urls(self):
        return [a.get("href") or a.get("src") for _, a in self.elements if {"href", "src"} & set(a)]


def test_attached_and_inline_raster_images_are_shown():
    attachments = {"plot.png": {"image/png": PNG}}
    page = Elements(
        render(f"![plot](attachment:plot.png) ![dot](data:image/png;base64,{PNG})", attachments)
    )
    assert page.urls() == [f"data:image/png;base64,{PNG}"] * 2


@pytest.mark.parametrize(
    "src",
    [
        "/logout",
        "/api/contents/notes.txt",
        "api/contents",
        "../../logout",
        "https://tracker.example/seen.png",
        "//tracker.example/seen.png",
        "http://127.0.0.1:8888/logout",
        "data:image/svg+xml;base64,PHN2Zz4=",
        "attachment:missing.png",
        "javascript:alert(1)",
    ],
)
def test_any_other_image_is_its_address_as_text(src):
    markup = render(f"before ![pic]({src}) after")
    page = Elements(markup)
    assert page.urls() == [], markup
    assert "image not shown" in markup and "before" in markup and "after" in markup
    assert src.replace("&", "&amp;") in markup or src in "".join(page.text)


def test_an_outside_link_keeps_its_href_and_shows_its_address():
    markup = render("[the paper](https://arxiv.org/abs/1706.03762) and <https://pytorch.org>")
    page = Elements(markup)
    assert page.urls() == ["https://arxiv.org/abs/1706.03762", "https://pytorch.org"]
    assert "the paper (https://arxiv.org/abs/1706.03762)" in "".join(page.text)
    assert render("[a section](#part-3)").count('href="#part-3"') == 1


@pytest.mark.parametrize(
    "url",
    [
        "/logout",
        "/api/contents",
        "logout",
        "./tree",
        "http://localhost:8888/api/contents",
        "http://127.0.0.1:8888/logout",
        "http://[::1]:8888/logout",
        "http://10.0.0.5:8888/hub/logout",
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "//evil.example",
    ],
)
def test_a_link_to_the_server_or_a_script_is_text_with_its_address(url):
    markup = render(f"[click here]({url})")
    assert Elements(markup).urls() == [], markup
    assert "click here" in markup and "refused-link" in markup


def test_outside_link_accepts_only_absolute_outside_addresses():
    assert outside_link("https://example.org/x") and outside_link("mailto:ta@example.org")
    assert not outside_link("/api") and not outside_link("http://127.0.0.2/")


@pytest.mark.parametrize(
    "raw", ["<table>", "<math><style>", "<style>", "<textarea>", "<!--", "<script>", "<title>"]
)
def test_nothing_after_an_unclosed_tag_is_lost(raw):
    markup = render(f"My answer: {raw}\n\nthe rest of my **answer**\n\nand a last line")
    text = "".join(Elements(markup).text)
    assert "the rest of my answer" in text and "and a last line" in text, markup
    assert raw in text, "the tag is shown as typed"
    assert {tag for tag, _ in Elements(markup).elements} <= {"p", "strong"}


def test_mermaid_is_shown_as_its_source():
    markup = render("```mermaid\ngraph TD; A-->B\n```")
    assert "mermaid" not in markup and "A--&gt;B" in markup


def test_formulas_become_mathml_and_a_formula_smuggling_markup_stays_tex():
    markup = render(r"Since $0 \le h < H$, $$\tilde W^{M,GQA}$$")
    assert markup.count("<math ") == 2 and "$" not in markup
    # a browser would hand MathJax a no-break space as &nbsp;, which its MathML parser refuses
    assert "\u00a0" not in render(r"$\text{small noise}\ x~y$").replace("&#x000A0;", "\u00a0")
    for tex in (r"\text{<img src=x onerror=alert(1)>}", r"\href{javascript:alert(1)}{x}"):
        assert tex_to_mathml(tex) is None
        shown = render(f"${tex}$")
        assert "<img" not in shown and "href" not in shown.replace("\\href", "")


def formulas(assignment):
    """(TeX, display) of every formula in the markdown cells of an assignment's source."""
    nb = nbformat.read(notebook_path(ROOT, "source", assignment), as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            renderer = SafeRenderer()
            MarkdownWithMath(renderer=renderer).render(cell.source)
            found += renderer.math
    return found


@pytest.mark.parametrize("assignment", assignments())
def test_every_formula_of_the_course_renders_to_mathml(assignment):
    found = formulas(assignment)
    assert len(found) > 20
    failed = [tex for tex, display in found if tex_to_mathml(tex, display) is None]
    assert failed == [], f"{len(failed)} of {len(found)} formulas do not convert: {failed[:3]}"
    markup = render("\n\n".join(f"$${tex}$$" if d else f"${tex}$" for tex, d in found))
    assert re.search(r"(?<!\\)\$", markup) is None, "no formula is left as TeX"


def test_a_markdown_table_keeps_its_alignment_and_nothing_else_of_style():
    markup = render("| a | b |\n|:--|--:|\n| 1 | 2 |")
    assert '<td style="text-align:right">2</td>' in markup
    assert "text-align:left" in clean(
        '<table><tr><td style="text-align:left; color:red">x</td></tr></table>'
    )
    assert "color" not in clean(
        '<table><tr><td style="text-align:left; color:red">x</td></tr></table>'
    )


def test_a_formula_inside_an_attribute_stays_escaped_tex():
    """A heading's id and an image's alt text hold their formula as text: MathML's quotes
    would close the attribute and let the formula's text add one (an event handler)."""
    hostile = r'$\text{"/onerror=alert(1)//}$'
    markup = render(f"# Title {hostile}\n\n![{hostile}](data:image/png;base64,{PNG})")
    names = {name for _, attrs in Elements(markup).elements for name in attrs}
    assert not any(name.startswith("on") for name in names), markup
    assert names <= {"id", "class", "href", "src", "alt", "xmlns", "display"}
    assert markup.count("<math ") == 1, "the heading's text still shows the formula as MathML"
