"""The book's matplotlib defaults: a page's executed output must not depend on the machine's load."""

from __future__ import annotations

import warnings

from nextword.booktools.plotting import use_book_style


def test_book_style_silences_only_the_load_dependent_legend_warning():
    """matplotlib warns when loc="best" takes over a second of wall time (a loaded machine); nbval would then
    see a stderr line the committed notebook lacks. Other warnings still show."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        use_book_style()
        warnings.warn('Creating legend with loc="best" can be slow with large amounts of data.', UserWarning)
        warnings.warn("a warning about the figure itself", UserWarning)
    assert [str(w.message) for w in caught] == ["a warning about the figure itself"]
