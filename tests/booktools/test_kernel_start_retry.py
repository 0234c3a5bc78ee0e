"""A notebook kernel that dies while starting is started again (conftest.py, for the nbval passes)."""

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).resolve().parents[2] / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)


def _flaky(failures: int, message: str = "Kernel died before replying to kernel_info"):
    calls = []

    def start(*args, **kwargs):
        calls.append((args, kwargs))
        if len(calls) <= failures:
            raise RuntimeError(message)
        return "km", "kc"

    return start, calls


def test_a_kernel_that_died_starting_is_started_again_with_a_warning():
    start, calls = _flaky(2)
    with pytest.warns(UserWarning) as record:
        assert root_conftest._retrying(start)(kernel_name="k", cwd="d") == ("km", "kc")
    assert [f"kernel start {i} failed" in str(w.message) for i, w in enumerate(record, 1)] == [True, True]
    assert calls == [((), {"kernel_name": "k", "cwd": "d"})] * 3


def test_three_deaths_or_another_error_are_raised():
    start, calls = _flaky(3)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="died before replying"):
        root_conftest._retrying(start)()
    assert len(calls) == root_conftest.KERNEL_START_TRIES
    start, calls = _flaky(1, "Kernel didn't respond in 60 seconds")
    with pytest.raises(RuntimeError, match="didn't respond"):
        root_conftest._retrying(start)()
    assert len(calls) == 1


def test_nbval_starts_its_kernels_through_the_retry():
    nbval_kernel = pytest.importorskip("nbval.kernel")
    assert getattr(nbval_kernel.start_new_kernel, "retries_kernel_start", False)
