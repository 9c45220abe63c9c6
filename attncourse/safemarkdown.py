"""Markdown cells render without script: the ``markdown2html`` filter of formgrader and feedback.

nbgrader's ``formgrade`` and ``feedback`` templates render every markdown cell
with ``cell.source | markdown2html`` and no sanitizer, even when
``HTMLExporter.sanitize_html`` is on (that switch only reaches the templates'
own ``clean_html`` calls, which these two replace). A student's written answer
``<img src=x onerror=...>`` or ``[x](javascript:...)`` thus becomes live markup
in formgrader, on the Jupyter server's origin, and in the feedback HTML.

:class:`SafeMarkdown` replaces the exporter's ``markdown2html`` filter
(``c.HTMLExporter.filters`` in ``nbgrader_config.py``): it renders with the
exporter's own filter, then cleans the HTML with bleach, the sanitizer
nbconvert itself uses, allowing what Markdown produces (paragraphs, emphasis,
lists, tables, code, links and images with safe URLs) and nothing that runs:
no event handler or ``javascript:`` URL survives, and raw HTML the allowlist
does not know (``<script>``, ``<iframe>``, ``<style>``, forms) is shown as the
text the student typed.

It cleans after rendering, not the source: nbconvert's ``SanitizeHTML``
preprocessor bleaches the Markdown source, which lets ``[x](javascript:...)``
through (Markdown, not HTML, makes that link) and turns the ``<`` of every
``$h < H$`` in a proof into a visible ``&lt;`` inside the formula.
"""

import re

import bleach
from bleach.css_sanitizer import CSSSanitizer
from jinja2 import pass_context
from traitlets.config import LoggingConfigurable

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre",
    "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead",
    "tr", "ul",
}  # fmt: skip
URL_SCHEMES = {"http", "https", "mailto"}
# Class names formgrader's own script looks for in a page: a student's element must not pose as one.
FORMGRADER_CLASSES = {
    "comment", "comment-saved", "extra-credit", "full-credit", "mark-graded", "nbgrader_cell",
    "no-credit", "save-icon", "score", "score-saved", "tabbable",
}  # fmt: skip
_CLASS = re.compile(r"[A-Za-z0-9_-]+")
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
# Filters that take the template context say so with this attribute (what @pass_context sets).
_PASS_CONTEXT = pass_context(lambda context: None).jinja_pass_arg


def _url(value, schemes=URL_SCHEMES):
    """True for a relative URL, an anchor, or one with a scheme in ``schemes``."""
    value = value.strip()
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", value)
    return scheme is None or scheme[1].lower() in schemes


def _attribute(tag, name, value):
    """bleach's per-attribute test: what Markdown writes, with URLs that cannot run."""
    if name == "class":
        return all(_CLASS.fullmatch(c) and c not in FORMGRADER_CLASSES for c in value.split())
    if tag == "a" and name == "href":
        return _url(value)
    if tag == "img" and name == "src":
        return _url(value, {"http", "https"}) or _DATA_IMAGE.fullmatch(value.strip()) is not None
    if tag in ("a", "img") and name in ("title", "alt"):
        return True
    if tag in ("td", "th") and name == "style":
        return True  # text-align; the CSS sanitizer keeps only what ALLOWED_STYLES lists
    return name in ("colspan", "rowspan") and tag in ("td", "th")


def clean(html: str) -> str:
    """Rendered Markdown with everything that could run, restyle or pose as formgrader removed."""
    return bleach.clean(
        html,
        tags=TAGS,
        attributes=_attribute,
        protocols=URL_SCHEMES | {"data"},  # data: only passes _attribute as a raster image
        css_sanitizer=CSSSanitizer(allowed_css_properties={"text-align"}),
        strip_comments=True,
    )


class SafeMarkdown(LoggingConfigurable):
    """``markdown2html`` for HTMLExporter: the exporter's own rendering, then :func:`clean`.

    Registered by name in ``c.HTMLExporter.filters``; nbconvert builds it with the
    exporter as its parent, so math, attachments and anchors render as before.
    """

    jinja_pass_arg = _PASS_CONTEXT

    def __call__(self, context, source: str) -> str:
        render = getattr(self.parent, "markdown2html", None)
        if render is None:  # not under an HTMLExporter: nbconvert's plain filter
            from nbconvert.filters import markdown2html

            return clean(markdown2html(source))
        return clean(render(context, source))
