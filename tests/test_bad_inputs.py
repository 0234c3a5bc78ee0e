"""Bad input gets a named error, everywhere (issues #22 and #33).

Three checks over the public callables of the numpy library:

* the fixed sweep of ``tests/bad_inputs.py`` (attention, norms, activations, positions, embedding,
  decoder + KV cache, decoding search and filters, n-grams, the BPE and character tokenizers and
  the BPE trainer, corpora and data paths, synthetic sources, evaluation): every listed bad value
  gives a named ``ValueError``/``TypeError`` or a documented finite result, never raw, silent or
  slow;
* the coarse sweep of ``tests/bad_inputs_theory.py`` over every public callable of the numpy
  library (243, from the ``__all__`` of the core packages, ``nextword.chapter6`` and
  ``nextword.theory.*``): ``None``, a string, a bool, a float, an int, a width-0 array and an
  array near the float64 limit in every required argument at once, with the same classification;
* a hypothesis fuzz test: random wrong types, NaN/inf, extreme scalars and arrays of random
  shape and dtype for one argument at a time; the call must end within a second of CPU time in a
  ``ValueError``/``TypeError`` that names an argument and speaks no numpy internals, or return
  something without NaN.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests import bad_inputs
from tests.bad_inputs import INTERNALS, Spec


@pytest.fixture()
def memory_cap() -> Any:
    """Cap this process's address space ~2 GiB above its current size while a test runs, so a
    runaway allocation is a MemoryError (a failed test) instead of the machine swapping."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    cap = size + 2 * 2**30
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad_inputs")


def test_sweep_every_bad_input_is_named_or_documented(scratch: Path, memory_cap: None) -> None:
    outs = bad_inputs.sweep(scratch)
    assert len(outs) > 1000 and len({o.spec for o in outs}) >= 60
    wrong = [f"{o.kind} {o.spec}({o.arg}={o.value}): {o.detail}" for o in outs if o.kind not in ("named", "documented")]
    assert not wrong, "\n".join(wrong)


def test_coarse_sweep_of_chapter6_and_theory(memory_cap: None) -> None:
    from tests import bad_inputs_theory

    outs = bad_inputs_theory.sweep()
    fns, _ = bad_inputs_theory.public_callables()
    assert len(fns) >= 240 and len(outs) == len(fns) * len(bad_inputs_theory.CLASSES)
    wrong = [f"{o.kind} {o.spec}({o.arg}={o.value}): {o.detail}" for o in outs if o.kind not in ("named", "documented")]
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------------------------------------ fuzzing
# integers: small ones and extremes that every size must refuse; sizes in between (a million new
# tokens, say) are legitimate long work and are not fuzzed
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.integers(min_value=-50, max_value=200),
    st.sampled_from([2**31, 10**12, 2**70, -(2**70), 2**63, 2**64 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**31, 10**12, 1e-310, 1e308, -1e308, float("nan"), float("inf")]),
    st.complex_numbers(max_magnitude=10),
)
_dtypes = st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.bool_, np.complex128, np.uint8])
_arrays = _dtypes.flatmap(
    lambda dt: hnp.arrays(
        dt,
        hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
        elements=None if dt is not np.float64 else st.floats(allow_nan=True, allow_infinity=True, width=64),
    )
)
_lists = st.one_of(st.lists(_scalars, max_size=4), st.lists(st.lists(st.integers(-3, 7), max_size=3), max_size=3))
bad_values = st.one_of(_scalars, _arrays, _lists)

_SPECS = bad_inputs.all_specs(Path(tempfile.mkdtemp(prefix="nextword-fuzz-")))  # corpora: not fuzzed


def _call(spec: Spec, arg: str, value: Any) -> None:
    kw = dict(spec.base)
    kw[arg] = value
    t0 = time.process_time()
    try:
        result = spec.fn(**kw)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        msg = str(exc)
        assert not any(s in msg for s in INTERNALS), f"numpy internals: {type(exc).__name__}: {msg}"
        names = set(spec.base) | set(spec.bad) | {"prefix", "logits", "context", "table", "k", "v"}
        assert any(n in msg for n in names), f"no argument named: {type(exc).__name__}: {msg}"
    else:
        assert not bad_inputs._has_nan(result), f"NaN came back for {arg}={value!r}"
    assert time.process_time() - t0 < 1.0, f"{spec.name}({arg}={value!r}) took more than 1 s"


@pytest.mark.parametrize(
    "spec",
    [
        s
        for s in _SPECS
        if not s.name.startswith(("load_corpus", "read_wikitext2", "BPETokenizer.save", "BPETokenizer.load"))
    ],
    ids=lambda s: s.name,
)
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_fuzz_one_argument(spec: Spec, data: st.DataObject, memory_cap: None) -> None:
    args = sorted(set(spec.bad) | set(spec.base))
    arg = data.draw(st.sampled_from(args), label="argument")
    value = data.draw(bad_values, label="value")
    _call(spec, arg, value)


@pytest.mark.slow
def test_one_bad_argument_among_valid_ones_for_every_callable(tmp_path: Path, memory_cap: None) -> None:
    """issue 48: every public callable of the numpy library gets a valid baseline call, then one argument
    at a time a bad value of each class (None, a string, a bool, a float, an int, a width-0 array, an
    array near the float64 limit, the baseline's array with a NaN) while the others stay valid. Each case
    must name that argument (or, for a mismatch, the other argument), or return a documented finite
    result; the cases not yet there are listed in tests/bad_inputs_one_known.txt, and the list must not
    grow nor keep a case that is fixed."""
    import warnings

    from tests import bad_inputs_one as one
    from tests.bad_inputs_theory import public_callables

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert not one.check_baselines(tmp_path)
        outs, missing = one.sweep(tmp_path)
    fns, _ = public_callables()
    assert not missing and len(fns) >= 245 and len(outs) > 6000
    found = one.not_yet_named(outs)
    new, fixed = sorted(found - one.KNOWN), sorted(one.KNOWN - found)
    assert not new, "new raw/silent/hang cases:\n" + "\n".join(new)
    assert not fixed, "fixed, remove from tests/bad_inputs_one_known.txt:\n" + "\n".join(fixed)


def test_torch_sweep_models_prior_config_and_checkpoints(tmp_path: Path, memory_cap: None) -> None:
    """The torch path's public API (issue 48): the model, the prior and its margin, the training
    configuration, and checkpoint loading (truncated, foreign, wrong-version, other-vocabulary files)."""
    pytest.importorskip("torch")
    from tests import bad_inputs_torch

    outs = bad_inputs_torch.sweep(tmp_path)
    assert len(outs) > 200 and len({o.spec for o in outs}) >= 12
    wrong = [f"{o.kind} {o.spec}({o.arg}={o.value}): {o.detail}" for o in outs if o.kind not in ("named", "documented")]
    assert not wrong, "\n".join(wrong)


def test_combinations_the_one_argument_sweeps_miss() -> None:
    """issue 48: a tokenizer's special tokens given bytes or None, an unknown error-handler name, a position
    array whose batch does not match, values near overflow in 2-D inputs (a named error or a NaN-free result)."""
    from nextword import attention, positions
    from nextword.tokenizers import BPETokenizer

    def tok(**kw: Any) -> BPETokenizer:
        return BPETokenizer([(97, 98, 256)], **kw)

    x = np.random.default_rng(0).normal(size=(2, 4, 8))
    huge = np.full((3, 4), 1e308)
    cases = [
        ("special_tokens", False, lambda: tok(special_tokens={b"<s>": 300})),
        ("special_tokens", False, lambda: tok(special_tokens={None: 300})),
        ("special_tokens", False, lambda: tok(special_tokens={"<s>": None})),
        ("allowed_special", False, lambda: tok(special_tokens={"<s>": 300}).encode("ab<s>", allowed_special=None)),
        ("allowed_special", False, lambda: tok(special_tokens={"<s>": 300}).encode("ab<s>", allowed_special=b"<s>")),
        ("errors", False, lambda: tok().decode([255, 254], errors="bogus")),
        ("errors", False, lambda: tok().decode([97], errors="bogus")),
        ("errors", False, lambda: tok().decode([97], errors=None)),
        ("errors", False, lambda: tok().encode("ab", errors="bogus")),
        ("positions", False, lambda: positions.apply_rope(x, positions=np.zeros((3, 4), dtype=int))),
        ("positions", False, lambda: positions.apply_rope(x, positions=np.zeros((2, 5), dtype=int))),
        ("x", True, lambda: positions.apply_rope(huge)),
        ("x", True, lambda: attention.softmax(huge)),
        ("q", True, lambda: attention.scaled_dot_product_attention(huge, huge, np.ones((3, 4)))),
    ]
    wrong = []
    for arg, ok, call in cases:
        kind, detail = bad_inputs.classify(call, arg, ok)
        if kind not in ("named", "documented"):
            wrong.append(f"{kind} {arg}: {detail}")
    assert not wrong, "\n".join(wrong)
