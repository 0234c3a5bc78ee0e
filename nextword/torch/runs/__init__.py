"""The saved runs behind the book (``book/results/``): the registry, the §7.4 λ ``sweep``, and the
Part 4 notebooks' plumbing (``book``)."""
