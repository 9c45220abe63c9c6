"""Markdown cells render inert and offline: the ``markdown2html`` filter of formgrader and feedback.

nbgrader's ``formgrade`` and ``feedback`` templates render every markdown cell
with ``cell.source | markdown2html`` and no sanitizer, even when
``HTMLExporter.sanitize_html`` is on. :class:`SafeMarkdown` replaces that filter
(``c.HTMLExporter.filters`` in ``nbgrader_config.py``) with one that renders a
student's Markdown so that nothing in it can act in a grader's browser:

- **Raw HTML is text.** The Markdown renderer escapes every tag the student typed
  (``<script>``, ``<img onerror>``, an unclosed ``<table>`` or ``<style>``), so the
  grader reads what was written and nothing after it is swallowed.
- **Images** come only from the cell's own attachments or an inline ``data:`` PNG,
  JPEG or GIF; any other address (``/logout``, ``/api/contents/...``, an outside
  server that would learn when the work was opened) is shown as text instead.
- **Links** show their address beside the text, and only leave the page for an
  outside ``http(s)``/``mailto`` address: a relative or same-origin path, or one on
  the grader's own machine, stays text, never a link to the Jupyter server.
- **Math** is rendered to MathML on the server (:mod:`attncourse.mathml`), so the
  feedback needs no script; a formula it cannot render stays TeX for MathJax.

What Markdown itself produces then passes nh3 (the Rust sanitizer ammonia) as a
second layer: the allowlist of tags and attributes below, no event handler or
script URL. nh3 replaced bleach here (deprecated by its maintainers) by measurement:
on the course's 65 Markdown cells both give the same markup (entities aside), nh3
in 3 ms against bleach's 400; neither has a published flaw that applies without
``math``, ``svg`` or raw-text tags allowed, which this allowlist never does (the
MathML is put in after cleaning, each formula checked against its own allowlist).
"""

import html
import ipaddress
import re
import secrets
from urllib.parse import unquote, urlsplit

import nh3
from jinja2 import pass_context
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from traitlets.config import LoggingConfigurable

from attncourse.mathml import tex_to_mathml

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead",
    "tr", "ul",
}  # fmt: skip
LINK_SCHEMES = {"http", "https", "mailto"}
# Class names formgrader's own script looks for in a page: a student's element must not pose as one.
FORMGRADER_CLASSES = {
    "comment", "comment-saved", "extra-credit", "full-credit", "mark-graded", "nbgrader_cell",
    "no-credit", "save-icon", "score", "score-saved", "tabbable",
}  # fmt: skip
_CLASS = re.compile(r"[A-Za-z0-9_-]+")
DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
# Filters that take the template context say so with this attribute (what @pass_context sets).
_PASS_CONTEXT = pass_context(lambda context: None).jinja_pass_arg


def outside_link(url: str) -> bool:
    """True for an absolute http(s) or mailto address that is not on the grader's own machine
    or network (a loopback, private or link-local address, ``localhost``), where a Jupyter
    server could answer."""
    try:
        parts = urlsplit(unquote(url.strip()))
    except ValueError:
        return False
    if parts.scheme.lower() == "mailto":
        return True
    host = (parts.hostname or "").lower().rstrip(".")
    if parts.scheme.lower() not in ("http", "https") or not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True
    return address.is_global


def raster_data_image(url: str) -> bool:
    return DATA_IMAGE.fullmatch(url.strip()) is not None


class SafeRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer with raw HTML escaped, images and links restricted and
    math put aside (as placeholders, see :func:`render`)."""

    def __init__(self, attachments=None, **kw):
        super().__init__(escape=True, attachments=attachments or {}, **kw)
        self.nonce = secrets.token_hex(8)
        self.math = []

    def _math(self, tex, display):
        self.math.append((tex, display))
        return f"attncourse-math-{self.nonce}-{len(self.math) - 1}."

    def inline_math(self, body):
        return self._math(body, False)

    def block_math(self, body):
        return self._math(body, True)

    def latex_environment(self, name, body):
        return self._math(f"\\begin{{{name}}}{body}\\end{{{name}}}", True)

    def block_code(self, code, info=None):
        if info and info.strip().startswith("mermaid"):  # no diagram script: show the source
            info = None
        return super().block_code(code, info=info)

    def image(self, text, url, title=None):
        src = url.strip()
        if src.startswith("attachment:"):
            src = self._attachment(src.removeprefix("attachment:"))
        if src and raster_data_image(src):
            return f'<img src="{html.escape(src)}" alt="{html.escape(text)}">'
        return (
            f'<span class="refused-image">[image not shown: {html.escape(text) or "no text"}, '
            f"<code>{html.escape(url)}</code>]</span>"
        )

    def _attachment(self, name):
        for mime, data in self.attachments.get(name, {}).items():
            if mime in ("image/png", "image/jpeg", "image/gif") and isinstance(data, str):
                return f"data:{mime};base64,{data}"
        return ""

    def link(self, text, url, title=None):
        address = html.escape(url)
        if url.startswith("#"):
            return f'<a href="{address}">{text}</a>'
        shown = "" if html.unescape(text) == url else f" (<code>{address}</code>)"
        if outside_link(url):
            return f'<a href="{address}" rel="noopener noreferrer">{text}</a>{shown}'
        return f'<span class="refused-link">{text}{shown or f" (<code>{address}</code>)"}</span>'


ATTRIBUTES = {
    "a": {"href", "rel", "title"},
    "img": {"alt", "src", "title"},
    "td": {"colspan", "rowspan", "style"},
    "th": {"colspan", "rowspan", "style"},
    **{f"h{level}": {"id"} for level in range(1, 7)},
    "*": {"class"},
}


def _attribute(tag, name, value):
    """The per-attribute test: what :class:`SafeRenderer` writes, and nothing that runs."""
    if name == "class":
        return all(_CLASS.fullmatch(c) and c not in FORMGRADER_CLASSES for c in value.split())
    if tag == "a" and name == "href":
        return value.startswith("#") or outside_link(value)
    if tag == "img" and name == "src":
        return raster_data_image(value)
    return name in ATTRIBUTES.get(tag, ())


def clean(markup: str) -> str:
    """HTML with everything that could run, restyle or pose as formgrader removed."""
    return nh3.clean(
        markup,
        tags=TAGS,
        attributes=ATTRIBUTES,
        attribute_filter=lambda tag, name, value: value if _attribute(tag, name, value) else None,
        url_schemes=LINK_SCHEMES | {"data"},  # data: only passes _attribute as a raster image
        filter_style_properties={"text-align"},
        strip_comments=True,
        link_rel=None,  # SafeRenderer sets rel on the links it keeps
    )


def _formula(tex, display):
    """MathML for one formula, else its TeX as MathJax reads it (escaped)."""
    mathml = tex_to_mathml(tex, display)
    if mathml:
        return mathml
    delimiter = "$$" if display else "$"
    return html.escape(f"{delimiter}{tex}{delimiter}", quote=False)


# A start tag as nh3 writes it: attribute values always in double quotes, " escaped inside.
_START_TAG = re.compile(r'<[A-Za-z][^>"]*(?:"[^"]*"[^>"]*)*>')


def render(source: str, attachments=None, **renderer_options) -> str:
    """A student's Markdown as inert HTML, with its math as MathML where it converts.

    A formula that ends up inside an attribute (a heading's id, an image's alt text) is
    put back there as escaped TeX: MathML there would close the attribute.
    """
    renderer = SafeRenderer(attachments=attachments, **renderer_options)
    cleaned = clean(MarkdownWithMath(renderer=renderer).render(source))
    pattern = re.compile(rf"attncourse-math-{renderer.nonce}-(\d+)\.")

    def as_text(m):
        tex, display = renderer.math[int(m[1])]
        return html.escape(f"{'$$' if display else '$'}{tex}{'$$' if display else '$'}")

    cleaned = _START_TAG.sub(lambda tag: pattern.sub(as_text, tag[0]), cleaned)
    return pattern.sub(lambda m: _formula(*renderer.math[int(m[1])]), cleaned)


class SafeMarkdown(LoggingConfigurable):
    """``markdown2html`` for HTMLExporter: :func:`render` with the cell's attachments.

    Registered by name in ``c.HTMLExporter.filters``; nbconvert builds it with the
    exporter as its parent, whose anchor-link settings it keeps.
    """

    jinja_pass_arg = _PASS_CONTEXT

    def __call__(self, context, source: str) -> str:
        cell = context.get("cell", {}) if context else {}
        options = {}
        if self.parent is not None and hasattr(self.parent, "anchor_link_text"):
            options = {
                "anchor_link_text": self.parent.anchor_link_text,
                "exclude_anchor_links": self.parent.exclude_anchor_links,
            }
        return render(source, cell.get("attachments", {}), **options)
