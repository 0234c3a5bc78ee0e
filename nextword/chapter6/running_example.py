"""Chapter 6's running example sentence, and a controlled source of variants of it.

The sentence (§6.1, Fig. 6.4): "The software engineer who had been working remotely from the
mountain cabin for several months finally submitted the code that would ___". Counted word by word
it has **21** context words, so the blank is word 22 (the chapter says 22 context words and
position 23; see book/ERRATA.md). Positions here are 1-based, as in the chapter.

:class:`RunningExampleSource` turns the sentence into a tiny language with *known* dependencies,
so a model trained on it can be compared with the truth (Figs. 6.10, 6.15; Exercise 7). Five
words vary, the rest are fixed:

=====  ==========================  =========================================================
word   alternatives                role for the blank (word 22)
=====  ==========================  =========================================================
2      software / pastry           domain: picks the object noun (word 19), not the blank itself
3      engineer / engineers        subject number: **no** effect on the blank (a distractor)
16     finally / hastily           discourse: success (run/rise) vs failure (crash/burn)
19     code / codes / cake / cakes semantic family (code → run/crash, cake → rise/burn) and number
21     would / now                 syntax: "would" takes the base form; "now" agrees with word 19
=====  ==========================  =========================================================

Everything is exact: :meth:`RunningExampleSource.joint` enumerates all sentences with their
probabilities, so mutual informations ``I(word_j ; blank)`` are computed, not estimated.

>>> src = RunningExampleSource()
>>> len(RUNNING_EXAMPLE), RUNNING_EXAMPLE[2], RUNNING_EXAMPLE[16], RUNNING_EXAMPLE[18]  # 0-based
(21, 'engineer', 'submitted', 'code')
>>> ids = src.sample(3, np.random.default_rng(0))
>>> ids.shape                                                  # 21 context words + the blank
(3, 22)
>>> round(src.mutual_information(3), 12)                       # engineer(s): irrelevant
0.0
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from nextword._validate import check_real

from nextword.data.synthetic import entropy

__all__ = ["RUNNING_EXAMPLE", "RunningExampleSource"]

#: The 21 context words of the running example (index ``t - 1`` holds word ``t``).
RUNNING_EXAMPLE: tuple[str, ...] = tuple(
    "The software engineer who had been working remotely from the mountain cabin for several months "
    "finally submitted the code that would".split()
)

_SLOTS: dict[int, tuple[str, ...]] = {  # 1-based word position -> alternatives (first = the chapter's)
    2: ("software", "pastry"),
    3: ("engineer", "engineers"),
    16: ("finally", "hastily"),
    19: ("code", "codes", "cake", "cakes"),
    21: ("would", "now"),
}
_VERBS = {("code", True): "run", ("code", False): "crash", ("cake", True): "rise", ("cake", False): "burn"}
_THIRD = {"run": "runs", "crash": "crashes", "rise": "rises", "burn": "burns"}


@dataclass(frozen=True)
class RunningExampleSource:
    """Variants of the running example with a known next-word law (see the module docstring).

    ``p_domain_match``: P(object noun matches the domain word) — ``software`` → code(s),
    ``pastry`` → cake(s). ``p_success``: P(success verb | finally, hastily).
    """

    p_domain_match: float = 0.9
    p_success: tuple[float, float] = (0.8, 0.3)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_real(self.p_domain_match, "p_domain_match", lo=0.0, hi=1.0)
        if isinstance(self.p_success, (str, bytes)) or len(np.shape(self.p_success)) != 1 or len(self.p_success) != 2:
            raise TypeError(f"p_success must be a pair of probabilities, got {self.p_success!r}")
        for i, p in enumerate(self.p_success):
            check_real(p, f"p_success[{i}]", lo=0.0, hi=1.0)

    # ---- vocabulary --------------------------------------------------------------------------
    @property
    def vocab(self) -> list[str]:
        """Word list; a word's id is its index. Sentence words first, then alternatives and verbs."""
        if "vocab" not in self._cache:
            words: list[str] = []
            for w in (*RUNNING_EXAMPLE, *itertools.chain(*_SLOTS.values()), *_THIRD, *_THIRD.values()):
                if w not in words:
                    words.append(w)
            self._cache["vocab"] = words
        return self._cache["vocab"]

    def encode(self, words: list[str] | tuple[str, ...]) -> np.ndarray:
        index = {w: i for i, w in enumerate(self.vocab)}
        try:
            return np.array([index[w] for w in words], dtype=np.int64)
        except KeyError as e:
            raise ValueError(f"word {e.args[0]!r} is not in the vocabulary {self.vocab}") from None

    def decode(self, ids: object) -> list[str]:
        return [self.vocab[int(i)] for i in np.asarray(ids).ravel()]

    @property
    def slots(self) -> dict[int, tuple[str, ...]]:
        """1-based positions that vary, with their alternatives."""
        return dict(_SLOTS)

    # ---- the exact law ----------------------------------------------------------------------
    def blank_distribution(self, context: list[str] | tuple[str, ...]) -> dict[str, float]:
        """``P(word 22 | words 1..21)`` as {word: probability} (depends on words 16, 19, 21 only)."""
        if len(context) != 21:
            raise ValueError(f"context must have the 21 words before the blank, got {len(context)}")
        obj, adverb, aux = context[18], context[15], context[20]
        family, plural = obj.rstrip("s"), obj.endswith("s")
        ps = self.p_success[_SLOTS[16].index(adverb)]
        out: dict[str, float] = {}
        for success, p in ((True, ps), (False, 1.0 - ps)):
            if p == 0.0:
                continue
            verb = _VERBS[(family, success)]
            if aux == "now" and not plural:
                verb = _THIRD[verb]
            out[verb] = out.get(verb, 0.0) + p
        return out

    def joint(self) -> list[tuple[tuple[str, ...], float]]:
        """Every full sentence (21 words + blank) with its probability (they sum to 1)."""
        if "joint" in self._cache:
            return self._cache["joint"]
        rows = []
        for dom, subj, adv, obj, aux in itertools.product(*(_SLOTS[k] for k in (2, 3, 16, 19, 21))):
            match = (obj.startswith("code")) == (dom == "software")
            p = 0.5 * 0.5 * 0.5 * 0.5 * (self.p_domain_match if match else 1 - self.p_domain_match) * 0.5
            words = list(RUNNING_EXAMPLE)
            words[1], words[2], words[15], words[18], words[20] = dom, subj, adv, obj, aux
            for verb, q in self.blank_distribution(words).items():
                rows.append((tuple(words) + (verb,), p * q))
        self._cache["joint"] = rows
        return rows

    def sample(self, num: int, rng: np.random.Generator) -> np.ndarray:
        """``num`` sentences as word ids, shape ``(num, 22)`` (the blank is the last column)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
        rows = self.joint()
        table = np.stack([self.encode(s) for s, _ in rows])  # (n_sentences, 22)
        probs = np.array([p for _, p in rows])
        return table[rng.choice(len(rows), size=int(num), p=probs / probs.sum())]

    def mutual_information(self, position: int) -> float:
        """Exact ``I(word_position ; blank)`` in nats (1-based position, 1..21)."""
        if not 1 <= int(position) <= 21:
            raise ValueError(f"position must be in 1..21, got {position}")
        pairs: dict[tuple[str, str], float] = {}
        for s, p in self.joint():
            key = (s[position - 1], s[-1])
            pairs[key] = pairs.get(key, 0.0) + p
        xs = sorted({a for a, _ in pairs})
        ys = sorted({b for _, b in pairs})
        P = np.array([[pairs.get((a, b), 0.0) for b in ys] for a in xs])  # (|x|, |y|)
        return float(entropy(P.sum(0)) + entropy(P.sum(1)) - entropy(P.ravel()))

    def blank_entropy(self) -> float:
        """``H(blank | words 1..21)`` in nats: the lowest achievable cross-entropy on the blank."""
        return float(-sum(p * np.log(self.blank_distribution(s[:21])[s[-1]]) for s, p in self.joint()))
