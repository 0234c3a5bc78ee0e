"""The saved runs behind the book (``book/results/``): the registry, the GPU tier (``gpu_check``), and the
Part 4 notebooks' plumbing (``book``)."""
