"""The GPT-4 split of ASCII text, computed with numpy instead of a regex engine.

:class:`~nextword.tokenizers.BPETokenizer` cuts text into pieces with the GPT-4 (cl100k) pattern
before merging, and merges never cross a piece boundary. On ASCII text the pattern reads

    '(?i:[sdmt]|ll|ve|re) | [^\\r\\nL0-9]?+L+ | [0-9]{1,3} | ' '?[^\\sL0-9]++[\\r\\n]* | \\s*[\\r\\n] | \\s+(?!\\S) | \\s+

(L = the letters A–Z, a–z; \\s = tab, line feed, \\x0b, \\x0c, carriage return, space; the first
alternative that matches at a position wins). Every character is matched by some alternative, so
the pieces tile the text and are fixed by where each one *starts*. Cut the text into maximal runs
of letters, digits, punctuation (every other character that is not whitespace, the apostrophe
included) and whitespace; reading the alternatives in order gives the starts run by run:

* a **digit run** starts a piece at its first digit and every third digit after it;
* a **punctuation run** starts one piece that takes the whole run and the line breaks right after
  it (``++`` gives nothing back) — unless the run is preceded by a space, which then starts the
  piece (`` ?``), or the run is a single character followed by letters (see letter runs);
* a **letter run** starts a piece, unless the character before it joins it: a whitespace character
  other than a line break (the optional prefix of the second alternative), or a punctuation run of
  one character not preceded by a space. An apostrophe joined in that way first tries the
  contractions ('s, 'd, 'm, 't, 'll, 've, 're, any case): the piece is the contraction, and the
  rest of the letter run starts a new piece;
* a **whitespace run** (after the line breaks a punctuation piece took) starts one piece that ends
  at its last line break, if it has one (``\\s*[\\r\\n]``); what follows, if anything, starts a
  piece, and its last character starts another when the text goes on (``\\s+(?!\\S)`` leaves it for
  the next piece; it joins a letter run, or a punctuation run if it is a space, or stands alone).

:func:`split_starts` returns the start of every piece. ``tests/tokenizers/test_split_ascii.py``
checks it against the ``regex`` module's ``findall`` on random and real text.
"""

from __future__ import annotations

import numpy as np

__all__ = ["WHITESPACE", "split_starts"]

WHITESPACE = b"\t\n\x0b\x0c\r "  # the ASCII characters the regex module's \s matches (``re``'s adds \x1c-\x1f)

_LETTER, _DIGIT, _PUNCT, _SPACE, _BREAK, _NONE = 0, 1, 2, 3, 4, 5  # byte classes (_NONE: off the text)
_TABLE = bytearray([_PUNCT]) * 256  # bytes.translate table: byte → its class
for _chars, _k in ((b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", _LETTER), (b"0123456789", _DIGIT)):
    for _c in _chars:
        _TABLE[_c] = _k
for _c in WHITESPACE:
    _TABLE[_c] = _BREAK if _c in b"\r\n" else _SPACE
_TABLE = bytes(_TABLE)
_LOWER = bytes(range(256)).lower()  # bytes.translate table: ASCII lower case
_BLANK, _APOSTROPHE = ord(" "), ord("'")


def split_starts(data: bytes) -> np.ndarray:
    """Start offsets of the GPT-4 pieces of ASCII bytes.

    Parameters
    ----------
    data:
        n bytes, every one < 128 (the caller checks ``str.isascii``).

    Returns
    -------
    (P,) int64, increasing, ``starts[0] == 0`` when n > 0: piece p is ``data[starts[p]:starts[p+1]]``
    (the last one runs to the end), the pieces of ``regex.findall(SPLIT_PATTERNS["gpt4"], text)``.
    Every step is an elementwise test of a byte and its neighbours, except the runs of line breaks
    and of digits, which are few.
    """
    n = len(data)
    pad = bytes([_NONE, _NONE])
    cls = np.frombuffer(pad + data.translate(_TABLE) + pad, np.uint8)  # (n+4,) classes, 2 off each end
    raw = np.frombuffer(pad + data + pad, np.uint8)  # (n+4,) the bytes, aligned with cls
    c, prev, prev2, nxt = cls[2 : n + 2], cls[1 : n + 1], cls[:n], cls[3 : n + 3]  # (n,) each
    is_punct, prev_punct = c == _PUNCT, prev == _PUNCT
    is_space, prev_space = c == _SPACE, prev == _SPACE
    is_break, prev_break = c == _BREAK, prev == _BREAK
    blank_before = raw[1 : n + 1] == _BLANK  # (n,) the byte before is a space

    # punctuation runs: one piece from the run's start, or from the space before it
    start = is_punct & ~prev_punct & ~blank_before
    # letter runs: joined by a whitespace character before them (not a line break) or by a
    # punctuation run of one character that no space precedes
    lone = prev_punct & (prev2 != _PUNCT) & (raw[:n] != _BLANK)  # (n,) such a run just before
    is_letter = c == _LETTER
    start |= is_letter & (prev != _LETTER) & ~prev_space & ~lone
    quoted = np.flatnonzero(is_letter & lone & (raw[1 : n + 1] == _APOSTROPHE))  # (Q,) 'x...
    if quoted.size:  # contractions: the apostrophe's piece takes 1 or 2 letters, the rest starts anew
        low = np.frombuffer(data.translate(_LOWER) + b"\0\0", np.uint8)
        a, b = low[quoted], low[quoted + 1]
        one = np.isin(a, np.frombuffer(b"sdmt", np.uint8))
        two = ~one & (((a == ord("l")) & (b == ord("l"))) | (((a == ord("v")) | (a == ord("r"))) & (b == ord("e"))))
        cut = quoted[one] + 1, quoted[two] + 2
        for at in cut:
            at = at[c[np.minimum(at, n - 1)] == _LETTER] if n else at
            start[at[at < n]] = True
    # digit runs: a piece at the first digit and every third one after it
    is_digit = c == _DIGIT
    first = is_digit & (prev != _DIGIT)
    start |= first
    if (is_digit & (prev == _DIGIT)).any():  # runs of two or more digits
        run_start = np.flatnonzero(first)  # (D,) digit runs
        count = (np.flatnonzero(is_digit & (nxt != _DIGIT)) - run_start) // 3  # (D,) pieces after the first
        at = np.repeat(run_start, count)  # (G,)
        start[at + 3 * (1 + np.arange(at.size) - np.repeat(np.cumsum(count) - count, count))] = True
    # whitespace runs: a piece at the run's start, unless the punctuation piece before took its
    # leading line breaks; then at the first character after those breaks
    start |= (is_space | is_break) & (prev != _SPACE) & (prev != _BREAK) & ~(is_break & prev_punct)
    breaks = np.flatnonzero(is_break)  # (K,) positions of line breaks, few
    if breaks.size:
        run_end = breaks[np.append(np.diff(breaks) != 1, True)] + 1  # (B,) ends of runs of breaks
        run_start = breaks[np.append(True, np.diff(breaks) != 1)]  # (B,) their starts
        took = (cls[run_start + 1] == _PUNCT) & (cls[run_end + 2] == _SPACE)  # cls is offset by 2
        start[run_end[took]] = True
        # the rest of a run after its last line break starts a piece: spaces right after a break,
        # when no break follows them within the run
        after = np.flatnonzero(is_space & prev_break)  # (A,)
        if after.size:
            space_end = np.flatnonzero(is_space & (nxt != _SPACE)) + 1  # (W,) ends of space runs
            end = space_end[np.searchsorted(space_end, after)]  # (A,)
            start[after[cls[end + 2] != _BREAK]] = True
    # the last character of two or more spaces followed by text leaves for the next piece
    start |= is_space & prev_space & (nxt != _SPACE) & (nxt != _BREAK) & (nxt != _NONE)
    return np.flatnonzero(start)
