"""Resampling of `torch.nn.functional`: `interpolate` (nearest, nearest-exact, linear,
bilinear, bicubic, trilinear, area), its deprecated `upsample*` aliases, `grid_sample`,
`affine_grid`, and the modules `Upsample`, `UpsamplingNearest2d`, `UpsamplingBilinear2d`,
composed of registry ops.

Every interpolation of `interpolate` is separable: nearest picks rows with `index_select`; the
linear and cubic modes multiply each spatial dim by a constant (out, in) weight matrix built
with numpy from ATen's source-index formulas (`area_pixel_compute_source_index`, the cubic
convolution with A = -0.75 and clamped taps), so the gradient is a matmul. `grid_sample`
is the registry composite `_grid_sample` (taps, weights and gathers as graph values: one graph
under capture; gradients reach both input and grid).
Semantics, defaults and errors: torch.nn.functional and ATen's UpSample.h / GridSampler.h.
Touches `eager` only.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..amp.policy import autocast_function
from ..creation import _linspace_values, as_tensor
from ..dispatch import FUNCTIONS
from .conv import adaptive_avg_pool1d, adaptive_avg_pool2d
from .module import Module
from .pooling import adaptive_avg_pool3d

_grid_sample = FUNCTIONS["_grid_sample"]

__all__ = ["GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "affine_grid",
           "grid_sample", "interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]
MODULES = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_NEEDS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_A = -0.75  # ATen's cubic convolution coefficient


def _const(a, like):
    return as_tensor(a, device=like.device)


# ---------------------------------------------------------------- interpolate


def _source_scale(n_in, n_out, align_corners, scale, dt):
    """ATen's `area_pixel_compute_scale` in the compute dtype."""
    if align_corners:
        return dt.type((n_in - 1) / (n_out - 1)) if n_out > 1 else dt.type(0)
    if scale is not None and scale > 0:
        return dt.type(1.0 / scale)
    return dt.type(n_in) / dt.type(n_out)


def _source_index(scale, n_out, align_corners, cubic, dt):
    dst = np.arange(n_out, dtype=dt)
    if align_corners:
        return scale * dst
    src = scale * (dst + dt.type(0.5)) - dt.type(0.5)
    return src if cubic else np.maximum(src, dt.type(0))


def _nearest_index(n_in, n_out, scale, exact: bool):
    """ATen's `nearest_idx` / `nearest_neighbor_exact_compute_source_index` (float32 math)."""
    dst = np.arange(n_out, dtype=np.float32)
    if not exact and n_out == n_in:
        return np.arange(n_out)
    if not exact and n_out == 2 * n_in:
        return np.arange(n_out) >> 1
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else \
        np.float32(n_in) / np.float32(n_out)
    src = np.floor((dst + np.float32(0.5)) * s if exact else dst * s).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _cubic_weights(t):
    """The 4 tap weights of ATen's `get_cubic_upsample_coefficients` for offsets t."""
    def conv1(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def conv2(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return [conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t)]


def _weight_matrix(n_in, n_out, mode, align_corners, scale, dt):
    """(n_out, n_in) matrix of a linear or cubic 1-D resampling."""
    cubic = mode == "bicubic"
    s = _source_scale(n_in, n_out, align_corners, scale, dt)
    src = _source_index(s, n_out, align_corners, cubic, dt)
    m = np.zeros((n_out, n_in), dtype=dt)
    rows = np.arange(n_out)
    i0 = np.floor(src).astype(np.int64)
    t = (src - i0).astype(dt)
    if cubic:
        for k, w in enumerate(_cubic_weights(t)):
            np.add.at(m, (rows, np.clip(i0 - 1 + k, 0, n_in - 1)), w.astype(dt))
    else:
        t = np.clip(t, 0, 1)
        i0 = np.minimum(i0, n_in - 1)
        np.add.at(m, (rows, i0), (1 - t).astype(dt))
        np.add.at(m, (rows, np.minimum(i0 + 1, n_in - 1)), t)
    return m


def _aa_filter(x, mode):
    """ATen's antialias filters: triangle (bilinear), Keys cubic with a = -0.5 (bicubic)."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(1 - x, 0)
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0))


def _aa_weight_matrix(n_in, n_out, mode, align_corners, scale, dt):
    """(n_out, n_in) matrix of ATen's antialiased resampling (`_compute_weights_aa`): the
    filter stretched by the downscale factor, its taps normalised to sum to one."""
    s = _source_scale(n_in, n_out, align_corners, scale, dt)
    support = (2 if mode == "bilinear" else 4) * 0.5 * max(s, 1)
    invscale = 1 / s if s >= 1 else 1.0
    m = np.zeros((n_out, n_in), dtype=dt)
    for i in range(n_out):
        center = s * (i + 0.5)  # ATen's align_corners_delta is 0 with antialias
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        w = _aa_filter((np.arange(lo, hi) - center + 0.5) * invscale, mode)
        if w.sum() != 0:
            w = w / w.sum()
        m[i, lo:hi] = w
    return m


def _output_size(input, dim, size, scale_factor, recompute_scale_factor, mode):
    """(output sizes, scale factors handed to the kernel or None), as `F.interpolate`."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(input.shape[2:])} and output size of {size}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"output size in (o1, o2, ...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * dim
        scales = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of "
                                 f"spatial dimensions, but got input with spatial dimensions "
                                 f"of {list(input.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, "
                                 f"d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                                 f"format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out = [math.floor(float(input.shape[2 + d]) * scales[d]) for d in range(dim)]
        if recompute_scale_factor or mode == "area":
            scales = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    return out, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, *spatial) with 1-3 spatial dims to `size` or floor(spatial *
    scale_factor) (`torch.nn.functional.interpolate`). Modes: "nearest" (ATen's legacy
    floor(dst * in / out)), "nearest-exact", "linear" (3-D), "bilinear"/"bicubic" (4-D),
    "trilinear" (5-D), "area" (adaptive average pooling). align_corners (linear/cubic modes,
    default False) maps corner pixel centres onto each other. antialias (bilinear/bicubic,
    4-D) widens the filter by the downscale factor, as ATen's `_upsample_*_aa`. A given
    scale_factor is also the kernel's scale unless recompute_scale_factor. ValueError for
    both or neither of size and scale_factor, align_corners with a non-interpolating mode,
    antialias with another mode or rank;
    NotImplementedError for a mode/rank mismatch."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if mode not in _MODES or dim not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact (got "
                                  f"{mode})")
    if mode in _NEEDS and input.ndim != _NEEDS[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_NEEDS[mode]}D input")
    if mode in _NEEDS and not input.dtype.is_floating_point:
        raise NotImplementedError(f'"upsample_{mode}" not implemented for '
                                  f"'{input.dtype.title}'")
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    out, scales = _output_size(input, dim, size, scale_factor, recompute_scale_factor, mode)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(map(str, input.shape[2:]))}) output "
                           f"({', '.join(map(str, out))})")
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1](
            input, tuple(out))
    y = input
    for d in range(dim):
        y = _resample_dim(y, 2 + d, out[d], mode, align_corners,
                          None if scales is None else scales[d], antialias)
    return y


def _resample_dim(y, dim, n_out, mode, align_corners, scale, antialias=False):
    """Resample dim `dim` of y to n_out: rows picked (nearest) or a weight matrix."""
    n_in = y.shape[dim]
    if mode.startswith("nearest"):
        if n_out == n_in and mode == "nearest":
            return y
        idx = _nearest_index(n_in, n_out, scale, mode == "nearest-exact")
        return FUNCTIONS["index_select"](y, dim, _const(idx, y))
    dt = np.dtype(y.dtype.np)
    build = _aa_weight_matrix if antialias else _weight_matrix
    m = _const(build(n_in, n_out, mode, align_corners, scale, dt), y)
    return FUNCTIONS["matmul"](y.movedim(dim, -1), m.t()).movedim(-1, dim)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of `interpolate` (`torch.nn.functional.upsample`), with its warning."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated `interpolate(..., mode="nearest")` (`F.upsample_nearest`)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated `interpolate(..., mode="bilinear", align_corners=True)`."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- grid_sample / affine_grid


@autocast_function("grid_sample")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample `input` (N, C, H, W) at `grid` (N, H_out, W_out, 2) locations (x, y) in
    [-1, 1] (or (N, C, D, H, W) with grid (..., 3) = (x, y, z)) -> (N, C, H_out, W_out)
    (`torch.nn.functional.grid_sample`). mode "bilinear" | "nearest" | "bicubic" (4-D only);
    padding_mode "zeros" | "border" | "reflection"; align_corners (default False) maps -1/1
    to the corner pixels' centres (else their outer edges). Gradients reach input and grid
    (not through nearest's rounding). ValueError for an unknown mode; RuntimeError for shapes
    that do not match. The registry composite `_grid_sample` (`ir/ops/grid_sample.py`)."""
    if align_corners is None:
        align_corners = False
    return _grid_sample(input, grid, mode, padding_mode, align_corners)


def _linspace(steps, align_corners, wdt):
    """ATen's `linspace_from_neg_one`: `linspace(-1, 1, steps)` (eager's, bit for bit torch's),
    times `(steps - 1)`, then divided by `steps`, in the dtype, unless align_corners."""
    dt = np.dtype(wdt.np)
    if steps <= 1:
        return np.zeros(1, dtype=dt)
    r = _linspace_values(-1, 1, steps, wdt)
    return r if align_corners else (r * (steps - 1) / steps).astype(dt)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid of affine maps `theta` for `grid_sample` (`torch.nn.functional.
    affine_grid`): theta (N, 2, 3) with size (N, C, H, W) -> (N, H, W, 2), or (N, 3, 4) with
    (N, C, D, H, W) -> (N, D, H, W, 3); grid = [x, y(, z), 1] @ theta^T over the normalised
    pixel centres. ValueError for a non-floating theta, mismatched shapes or non-positive
    sizes; NotImplementedError for other sizes."""
    if align_corners is None:
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} "
                         f"for size torch.Size({size}). Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    dt = np.dtype(theta.dtype.np)
    spatial = size[2:]
    axes = [_linspace(s, align_corners, theta.dtype) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # spatial order (D,) H, W
    base = np.stack(list(mesh[::-1]) + [np.ones(spatial, dtype=dt)], -1)  # x, y(, z), 1
    base = _const(base.reshape(1, -1, nd + 1), theta)
    grid = FUNCTIONS["matmul"](base, theta.transpose(1, 2))
    return grid.reshape([size[0]] + spatial + [nd])


# ---------------------------------------------------------------- modules


class Upsample(Module):
    """`F.interpolate` with fixed arguments (`torch.nn.Upsample`); scale_factor stored as
    float(s)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None \
            else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """`Upsample(mode="nearest")` of 4-D inputs (`torch.nn.UpsamplingNearest2d`)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """`Upsample(mode="bilinear", align_corners=True)` (`torch.nn.UpsamplingBilinear2d`)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
