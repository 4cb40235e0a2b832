"""The op declarations: every op wick knows, each defined once (see `ir/opdef.py`).

One module per family; importing this package registers them all, in this order.
"""

from . import (  # noqa: F401
    elementwise, unary, activations, reductions, statistics, linalg, shape, indexing, complex,
)
from . import pnorm  # noqa: F401  (the p-norm reduction, split from reductions)
from . import join, matrix, norms, scatter, sorting  # noqa: F401  (part C's families)
from . import masked  # noqa: F401  (masked_fill/scatter, take, put: split from scatter)
from . import device  # noqa: F401
from . import random  # noqa: F401  (samplers: the generator state as a value)
from . import fft  # noqa: F401  (torch.fft: library-call transforms)
from . import linalg_solve, linalg_lstsq  # noqa: F401  (torch.linalg solvers, LU, lstsq, LDL)
from . import linalg_ex  # noqa: F401  (solve_ex, inv_ex, cholesky_ex and LAPACK's info)
from . import linalg_functions  # noqa: F401  (eig, matrix_exp, cross... top-level aliases)
from . import linalg_qr  # noqa: F401  (geqrf, householder_product, ormqr)
from . import ctc, distance  # noqa: F401  (cdist, pdist, the CTC loss recursions)
from . import special  # noqa: F401  (torch.special: scipy.special library calls)
from . import special_functions  # noqa: F401  (Bessel functions, orthogonal polynomials)
from . import extra_math  # noqa: F401  (issue 16 sweep: copysign, heaviside, gcd, logcumsumexp...)
from . import rnn  # noqa: F401  (whole-sequence LSTM/GRU/RNN layers with BPTT backward)
from . import conv  # noqa: F401
from . import pooling  # noqa: F401  (max pooling's window search, split from conv)
from . import planes  # noqa: F401  (plane gather/scatter-add: pooling's values and gradient)
from . import transformer  # noqa: F401  (layer norm and attention weights run whole)
from . import batch_norm  # noqa: F401  (training batch norm run whole, one backward node)
from . import grid_sample  # noqa: F401  (grid_sample as one composite: taps as graph values)
from . import losses  # noqa: F401  (cross entropy's common case run whole, one backward node)
from . import grad_hooks  # noqa: F401  (Tensor.register_hook of an intermediate, captured)
from . import custom_function  # noqa: F401  (a user's autograd.Function in a graph)
