"""Exercise checkers: ``check_ex_p<part>_<NN>(answer, ...)`` prints ✓ or raises ExerciseCheckError."""
from ._common import ExerciseCheckError, passed, fail, check_shape, check_close, check_true  # noqa: F401
from .part1 import *  # noqa: F401,F403
from .part2 import *  # noqa: F401,F403
from .part3 import *  # noqa: F401,F403
from .part4 import *  # noqa: F401,F403
from .part5 import *  # noqa: F401,F403
