"""Shared test configuration.

Torch tests run on one intra-op thread: their tensors are tiny, and on a shared 2-core machine
threads only add contention (see :func:`nextword.torch.training.token_lm.torch_threads`). The fixture acts only in
tests whose module imported torch, so numpy-only tests never pay for importing it.
"""

import sys

import pytest


@pytest.fixture(autouse=True)
def _torch_one_thread():
    if "torch" not in sys.modules:
        yield
        return
    from nextword.torch.training.token_lm import torch_threads

    with torch_threads(1):
        yield
