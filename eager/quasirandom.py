"""`torch.quasirandom`: `SobolEngine`, a low-discrepancy Sobol sequence generator. Unscrambled
draws are scipy.stats.qmc.Sobol's, which equal PyTorch's (the same Joe-Kuo direction numbers);
scrambled ones (Owen scrambling seeded by `seed`) are valid Sobol scramblings but not PyTorch's
bits. Semantics: the torch.quasirandom.SobolEngine documentation."""

from __future__ import annotations

import warnings

from ir import dtypes as D

from . import creation

__all__ = ["SobolEngine"]


class SobolEngine:
    """`SobolEngine(dimension, scramble=False, seed=None)`: points in [0, 1)^dimension;
    `draw(n)`, `draw_base2(m)`, `fast_forward(n)`, `reset()`. ValueError for dimension
    outside [1, 21201]."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if not 1 <= dimension <= self.MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, "
                             f"{self.MAXDIM}]")
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self.reset()

    def _engine(self):
        from scipy.stats import qmc

        return qmc.Sobol(self.dimension, scramble=self.scramble, seed=self.seed)

    def reset(self):
        """Back to the first point."""
        self._sobol = self._engine()
        self.num_generated = 0
        return self

    def draw(self, n=1, out=None, dtype=None):
        """The next `n` points, (n, dimension), default float dtype unless `dtype`."""
        with warnings.catch_warnings():  # (scipy warns on counts that are not powers of 2)
            warnings.simplefilter("ignore")
            pts = self._sobol.random(n)
        self.num_generated += n
        t = creation.tensor(pts, dtype=D.get_default_dtype() if dtype is None else dtype)
        if out is not None:
            out.resize_(tuple(t.shape)).copy_(t)
            return out
        return t

    def draw_base2(self, m, out=None, dtype=None):
        """The next 2**m points (ValueError when the total would not stay a power of 2)."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(f"The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total}. If you "
                             "still want to draw n points, use SobolEngine.draw()")
        return self.draw(n, out, dtype)

    def fast_forward(self, n):
        """Skip the next `n` points."""
        self._sobol.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self):
        extra = ", scramble=True" if self.scramble else ""
        extra += f", seed={self.seed}" if self.seed is not None else ""
        return f"SobolEngine(dimension={self.dimension}{extra})"
