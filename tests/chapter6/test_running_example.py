"""Tests for nextword.chapter6.running_example: the chapter's sentence and its controlled variants."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.chapter6 import RUNNING_EXAMPLE, RunningExampleSource


def test_sentence_positions():
    words = list(RUNNING_EXAMPLE)
    assert len(words) == 21
    assert words.index("software") + 1 == 2 and words.index("engineer") + 1 == 3
    assert words.index("submitted") + 1 == 17 and words.index("code") + 1 == 19


def test_joint_is_a_distribution_and_samples_follow_it():
    src = RunningExampleSource()
    probs = np.array([p for _, p in src.joint()])
    assert probs.min() > 0 and abs(probs.sum() - 1) < 1e-12
    ids = src.sample(20000, np.random.default_rng(0))
    words = [src.decode(r) for r in ids[:50]]
    assert all(w[:21] != list(RUNNING_EXAMPLE) or w[-1] in ("run", "crash") for w in words)
    # empirical frequency of "code" at word 19 vs the exact marginal
    exact = sum(p for s, p in src.joint() if s[18] == "code")
    emp = np.mean(ids[:, 18] == src.encode(["code"])[0])
    assert abs(emp - exact) < 4 * np.sqrt(exact * (1 - exact) / len(ids))


def test_mutual_information_against_empirical_plug_in():
    src = RunningExampleSource()
    ids = src.sample(40000, np.random.default_rng(1))
    for pos in (2, 3, 16, 19, 21, 5):
        x, y = ids[:, pos - 1], ids[:, -1]
        joint = np.zeros((ids.max() + 1, ids.max() + 1))
        np.add.at(joint, (x, y), 1)
        P = joint / joint.sum()
        px, py = P.sum(1), P.sum(0)
        nz = P > 0
        mi = float((P[nz] * np.log(P[nz] / np.outer(px, py)[nz])).sum())
        assert abs(mi - src.mutual_information(pos)) < 0.01
    assert src.mutual_information(3) == pytest.approx(0.0, abs=1e-12)


def test_blank_entropy_is_the_expected_conditional_entropy():
    src = RunningExampleSource(p_success=(1.0, 1.0))  # deterministic blank
    assert src.blank_entropy() == pytest.approx(0.0, abs=1e-12)
    src = RunningExampleSource(p_success=(0.5, 0.5))
    assert src.blank_entropy() == pytest.approx(np.log(2), rel=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="p_domain_match"):
        RunningExampleSource(p_domain_match=1.5)
    with pytest.raises(ValueError, match="vocabulary"):
        RunningExampleSource().encode(["zebra"])
    with pytest.raises(ValueError, match="position"):
        RunningExampleSource().mutual_information(22)
