"""The measured-property check (``nextword.booktools.checks.claims``): a caption or a claims-table row that
states a measured property names the assert that checks it."""

from __future__ import annotations

from nextword.booktools.checks import claims
from nextword.booktools.pages import BOOK, parse_page

_PAGE = """# %% [markdown]
# # 9.1 A page

# %%
norms = compute()
{code}

# %% [markdown]
# **Figure 9.1.1.** The attention norms stay flat over the distance.

# %% [markdown]
# | claim (§9.1) | measured here |
# |---|---|
# | a state forgets | the trained GRU loses early symbols |
# | three matrices | $3d^2$ parameters |
"""


def _found(code: str) -> list[str]:
    page = parse_page(_PAGE.format(code=code), "book/part9_x/page.py")
    return [p.message.split(" states")[0] for p in claims.check(page)]


def test_a_caption_and_a_row_that_state_a_measured_property_need_a_named_assert():
    assert _found("assert norms.min() > 0") == ["Figure 9.1.1", "a claims-table row"]
    named = 'assert np.ptp(norms) < 0.05  # Figure 9.1.1: flat\n# claim "loses early symbols": recall falls\nassert r[0] < r[-1]'
    assert _found(named) == []
    assert _found("# Figure 9.1.1: flat within 5 %\nassert np.ptp(norms) < 0.05") == ["a claims-table row"]
    assert _found("x = 1  # Figure 9.1.1: flat (no assert on this line)") == ["Figure 9.1.1", "a claims-table row"]
    assert _found('assert ok  # claim "GRU": too short to name a row') == ["Figure 9.1.1", "a claims-table row"]


def test_words_of_a_formula_or_of_code_are_not_measured_properties():
    assert claims.measured_words("three matrices, $3d^2$ parameters, `flat_index`") == []
    assert claims.measured_words("stays near 10⁻⁸ and ≈ 0.3") == ["near", "≈"]


def test_the_claims_table_of_6_1_is_caught():
    """Issue 45 #3: 6.1's claims table says the trained GRU "loses early symbols", which no assert checks."""
    text = (BOOK / "part1_chapter6" / "6_1_parallel_attention.py").read_text(encoding="utf-8")
    if "loses early symbols" not in text:  # the page has been rewritten: put the row back into a copy
        text += (
            "\n# %% [markdown]\n# | claim (§6.1) | measured here |\n# |---|---|\n# | x | GRU loses early symbols |\n"
        )
    page = parse_page(text, "book/part1_chapter6/6_1_parallel_attention.py")
    rows = [p for p in claims.check(page) if "claims-table row" in p.message and "loses" in p.message]
    assert rows, "6.1's 'loses early symbols' row is not flagged"
