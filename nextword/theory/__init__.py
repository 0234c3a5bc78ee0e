"""Theory, one subpackage per paper: ``formulation`` (Baptista, Stuart, Tran: objectives, discrete
diffusion, state-space models, the set transformer), ``dynamics`` (Aggarwal, Dalal, Misra: gradient
dynamics of attention), ``barrier`` (Agarwal et al.: support tokens and margins), ``svflow`` (Liao:
score-based variational flow). All numpy; the torch parts live in :mod:`nextword.torch`."""
