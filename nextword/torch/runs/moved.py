"""Where the torch code of the saved runs moved: old path -> new path (the torch house, issues #27 and #47).

A saved run records the commit of the code that produced it. When a module only moves, the run stays
current: :func:`nextword.provenance.changed_code` reads the run's import closure at that commit, keys
each file by its new path, rewrites the moved modules' paths and dotted names in their text, and
compares what each file computes with the working tree. A file whose statements changed beyond the move
makes the run stale. Add a row here when a module of the package moves again
(``git log --diff-filter=R --name-status`` lists the renames), and to :data:`MOVED_NAMES` when a
function or class moves to another module.

>>> MOVED["nextword/torch/lm.py"]
'nextword/torch/models/lm.py'
"""

from __future__ import annotations

__all__ = ["MOVED", "MOVED_NAMES"]

#: old path -> new path of every module of nextword/torch that moved into the subpackages
#: (commits df47d89 "torch house", 89b24c9 "one registry" and a2d36cf "gpu-check in the house"), then
#: the barrier experiment's own room (issue 47)
MOVED: dict[str, str] = {
    "nextword/torch/model.py": "nextword/torch/models/gpt.py",
    "nextword/torch/lm.py": "nextword/torch/models/lm.py",
    "nextword/torch/rnn.py": "nextword/torch/models/rnn.py",
    "nextword/torch/prior.py": "nextword/torch/barrier/prior.py",
    "nextword/torch/robustness.py": "nextword/torch/barrier/robustness.py",
    "nextword/torch/ablation.py": "nextword/torch/probes/ablation.py",
    "nextword/torch/fig628.py": "nextword/torch/probes/fig628.py",
    "nextword/torch/layer_probe.py": "nextword/torch/probes/layer_probe.py",
    "nextword/torch/book.py": "nextword/torch/runs/book.py",
    "nextword/torch/results.py": "nextword/torch/runs/barrier_runs.py",
    "nextword/torch/runs/results.py": "nextword/torch/runs/barrier_runs.py",
    "nextword/torch/saved_runs.py": "nextword/torch/runs/seeded_runs.py",
    "nextword/torch/runs/saved_runs.py": "nextword/torch/runs/seeded_runs.py",
    "nextword/torch/sweep.py": "nextword/torch/barrier/sweep.py",
    "nextword/torch/svflow_hybrid.py": "nextword/torch/svflow/hybrid.py",
    "nextword/torch/hybrid_runs.py": "nextword/torch/svflow/hybrid_runs.py",
    "nextword/torch/svflow_lm.py": "nextword/torch/svflow/lm.py",
    "nextword/torch/svflow_probe.py": "nextword/torch/svflow/probe.py",
    "nextword/torch/checkpoint.py": "nextword/torch/training/checkpoint.py",
    "nextword/torch/config.py": "nextword/torch/barrier/config.py",
    "nextword/torch/batching.py": "nextword/torch/training/data.py",
    "nextword/torch/distributed.py": "nextword/torch/training/distributed.py",
    "nextword/torch/fetch.py": "nextword/torch/training/fetch.py",
    "nextword/torch/loop.py": "nextword/torch/barrier/train.py",
    "nextword/torch/gpu_check.py": "nextword/torch/runs/gpu_check.py",
    "nextword/torch/training/loop.py": "nextword/torch/barrier/train.py",
    "nextword/torch/training/config.py": "nextword/torch/barrier/config.py",
    "nextword/torch/runs/sweep.py": "nextword/torch/barrier/sweep.py",
    "nextword/torch/training/gpu_check.py": "nextword/torch/runs/gpu_check.py",
}

#: old dotted name -> new dotted name of every function or class that moved to another module (issue 47):
#: a fingerprint replayed at an older commit (:mod:`nextword.torch.runs.fingerprint`) finds them there
MOVED_NAMES: dict[str, str] = {
    **{
        f"nextword.torch.models.lm.{n}": f"nextword.torch.training.token_lm.{n}"
        for n in ("train_lm", "evaluate_loss", "torch_threads", "token_ids", "token_batch", "check_block_size")
    },
    "nextword.torch.models.gpt.select_device": "nextword.torch.training.device.select_device",
    "nextword.torch.models.gpt.autocast_context": "nextword.torch.training.device.autocast_context",
    "nextword.torch.runs.gpu_check.gpu_info": "nextword.torch.training.device.gpu_info",
}
