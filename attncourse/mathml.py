"""TeX formulas to MathML on the server (latex2mathml), so a page shows math without a script.

latex2mathml writes some of its input into the output as it is (the argument of
``\\text{...}``, ``\\href``'s address), so its MathML is parsed and kept only when
every element and attribute is one of the presentation MathML below; otherwise
:func:`tex_to_mathml` returns ``None`` and the caller keeps the TeX.
"""

import xml.etree.ElementTree as ET

from latex2mathml.converter import convert

NAMESPACE = "{http://www.w3.org/1998/Math/MathML}"
ELEMENTS = {
    "math", "menclose", "merror", "mfrac", "mi", "mmultiscripts", "mn", "mo", "mover",
    "mpadded", "mphantom", "mprescripts", "mroot", "mrow", "ms", "mspace", "msqrt", "mstyle",
    "msub", "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder", "munderover", "none",
}  # fmt: skip
ATTRIBUTES = {
    "accent", "accentunder", "align", "columnalign", "columnlines", "columnspacing", "depth",
    "display", "displaystyle", "fence", "form", "frame", "height", "largeop", "linethickness",
    "lspace", "mathsize", "mathvariant", "maxsize", "minsize", "movablelimits", "notation",
    "rowlines", "rowspacing", "rspace", "scriptlevel", "separator", "stretchy", "symmetric",
    "linebreak", "width",
}  # fmt: skip
# latex2mathml has no ``aligned``: the same columns (right, left, right, ...) as an array.
ALIGNED = (
    ("\\begin{aligned}", "\\begin{array}{" + "rl" * 5 + "}"),
    ("\\end{aligned}", "\\end{array}"),
)


# latex2mathml spaces words in \\text{} with no-break spaces; a browser writes those back as
# &nbsp; when MathJax reads the page's MathML, which its XML parser refuses: a four-per-em
# space (a word space's width) instead.
NO_BREAK_SPACE, WORD_SPACE = "&#x000A0;", "&#x02005;"


def presentation_only(mathml: str) -> bool:
    """True when ``mathml`` parses and holds only allowlisted elements and attributes."""
    try:
        root = ET.fromstring(mathml)
    except ET.ParseError:
        return False
    for element in root.iter():
        if element.tag.removeprefix(NAMESPACE) not in ELEMENTS:
            return False
        if any(name not in ATTRIBUTES or "(" in value for name, value in element.attrib.items()):
            return False
    return True


def tex_to_mathml(tex: str, display: bool = False) -> str | None:
    """The MathML of one formula, or ``None`` when latex2mathml fails or writes anything else."""
    for old, new in ALIGNED:
        tex = tex.replace(old, new)
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception:  # latex2mathml raises many kinds on TeX it does not know
        return None
    return mathml.replace(NO_BREAK_SPACE, WORD_SPACE) if presentation_only(mathml) else None
