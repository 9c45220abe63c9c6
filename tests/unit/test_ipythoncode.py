"""The cell transform shared by the limits, the integrity scan and the judge's rules: a text's
transform is kept (a grading process transforms each cell several times, and the course's
cells for every student), and only up to its size bound, so that hostile cells cannot fill
the grading process's memory."""

from IPython.core.inputtransformer2 import TransformerManager

from attncourse import ipythoncode
from attncourse.ipythoncode import CACHED_TEXT, cell_python

MAGICS = "%time x = 1\n!ls\ny = 2\n"


def test_a_kept_transform_is_ipythons_and_is_reused():
    ipythoncode._kept_python.cache_clear()
    first = cell_python(MAGICS)
    assert first == TransformerManager().transform_cell(MAGICS)
    assert "run_line_magic" in first and "system" in first
    assert cell_python(MAGICS) is first
    info = ipythoncode._kept_python.cache_info()
    assert (info.hits, info.misses) == (1, 1)


def test_a_text_over_the_bound_is_transformed_but_not_kept():
    ipythoncode._kept_python.cache_clear()
    big = MAGICS + "z = 0\n" * (CACHED_TEXT // 6 + 1)
    assert len(big) > CACHED_TEXT
    assert cell_python(big) == TransformerManager().transform_cell(big)
    assert ipythoncode._kept_python.cache_info().currsize == 0


def test_a_text_ipython_cannot_transform_is_none_kept_or_not():
    broken = "%%time\n" * 3 + "\x00"
    assert cell_python("def f(:\n") == TransformerManager().transform_cell("def f(:\n")
    for text in (broken, broken + " " * CACHED_TEXT):
        try:
            expected = TransformerManager().transform_cell(text)
        except Exception:  # noqa: BLE001
            expected = None
        assert cell_python(text) == expected
