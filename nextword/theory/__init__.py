"""Theory modules, one per paper: ``barrier`` (support tokens & margins), ``dynamics`` (gradient
dynamics of attention), ``svflow`` (score-based variational flow), ``diffusion`` and ``ssm``
(formulation paper §9 and §5.3)."""
