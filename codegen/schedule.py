"""Reduction loop schedules of a `Kernel`, decided when it is lowered (`kernel._make_kernel`)
and printed by `render.py`: column reductions interchanged per tile (`column_block`), short
contiguous runs spread far apart interleaved per tile (`interleave_block`), and float sums
blocked and combined pairwise (`cascaded`). Imports nothing of ours at run time (the Kernel
type only in annotations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .kernel import Kernel

SUM_BLOCK = 1024
COL_BLOCK = 512


def column_block(k: Kernel) -> int:
    """Tile width for a reduction over a strided dimension (`x.sum(0)`), else 0.

    When no input is contiguous along the innermost reduction loop but one is along the
    innermost parallel loop `j`, walking each column down its stride is slow (one cache line
    per element). The renderer then interchanges: per tile of `COL_BLOCK` values of `j`, a
    stack array holds one accumulator per column, each phase loops over the reduction loops
    outside and the tile inside (contiguous, vectorized, no cross-lane reduction), and the
    epilogue runs per column. Float sums accumulate in float64 (float32/float16 inputs) and in
    chunks of at most `SUM_BLOCK` reduced elements whose sums are added into a total (error
    about (SUM_BLOCK + n / SUM_BLOCK) ulp instead of n); max/min/prod/integer accumulators
    combine with the same primitives as the row loop, so NaN propagation is unchanged."""
    if not k.rloops or not k.outer:
        return 0
    jd, rd = len(k.outer) - 1, len(k.loops) - 1
    if any(b.strides[rd] == 1 for b in k.inputs):
        return 0
    if not any(b.strides[jd] == 1 for b in k.inputs):
        return 0
    return COL_BLOCK


ROW_RUN = 256      # elements: shorter contiguous reduction runs are interleaved
TILE_RUN = 2048     # elements of each run of memory per tile


def interleave_block(k: Kernel) -> int:
    """Tile width for a reduction over short contiguous runs spread far apart, else 0.

    NCHW batch norm reduces per channel over (N, H, W): each channel's 64-float rows (H*W)
    lie 2048 floats apart (C*H*W), while the next channel's rows continue them. Walking one
    channel's rows at a time touches a few cache lines per page, which the hardware
    prefetchers do not follow, and with a power-of-two sample stride every row falls into
    the same cache sets, so later phases miss (`k5` of the CNN benchmark: ~60 us for 0.5 MB,
    0.46 ns per element). When the innermost reduction loop runs at most `ROW_RUN` elements,
    stride 1, and the innermost parallel loop continues those runs (its stride is the run's
    length) for some input, the loops are interleaved as column reductions are (see
    `column_block`): per tile of columns, each phase runs the outer reduction loops outside
    and, inside, each column's contiguous run (`col_inner`); a tile covers about `TILE_RUN`
    elements of each run of memory. Float sums add the float32 sum of each run into a float64
    total per column (error about `ROW_RUN` ulp, as blocked sums)."""
    if len(k.rloops) < 2 or not k.outer:
        return 0
    jd, rd = len(k.outer) - 1, len(k.loops) - 1
    run, nj = k.rloops[-1][1], k.outer[-1][1]
    if run > ROW_RUN or nj < 2:
        return 0
    if not any(b.strides[rd] == 1 and b.strides[jd] == run for b in k.inputs):
        return 0
    return max(1, min(nj, TILE_RUN // run))


def cascaded(k: Kernel, a: int) -> bool:
    """Accumulator `a` is a float sum: with `k.sum_block`, it is summed as numpy and ATen sum
    (an error growing with log(n), not n): the vectorized loop adds at most `sum_block`
    elements into it, then the block's sum goes into a binary counter of partial sums (level
    l holds the sum of 2**l blocks; two equal levels merge), and the levels are added at the
    end. Float32 sums of 10**7 values: relative error 1.5e-3 with one vectorized
    accumulator, about 1e-7 blocked."""
    return k.accs[a][0].is_floating_point and any(
        comb == "add" for ph in k.phases for b, comb, _ in ph.accs if b == a)
