"""`torch.nn.utils.fuse_conv_bn_eval` / `fuse_conv_bn_weights` / `fuse_linear_bn_eval` /
`fuse_linear_bn_weights`: fold an eval-mode BatchNorm that follows a convolution or linear
layer into that layer's weight and bias (w' = w * gamma / sqrt(var + eps) along the output
channels, b' = (b - mean) * gamma / sqrt(var + eps) + beta), for inference. Semantics of
PyTorch's `torch/nn/utils/fusion.py`. Touches `eager.nn` only.
"""

from __future__ import annotations

import copy

from ...creation import zeros_like
from ...grad_mode import no_grad
from ..module import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of `conv` computing conv followed by `bn` (both in eval mode; AssertionError
    otherwise). `transpose` for a ConvTranspose (output channels on dim 1)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("running_mean and running_var must be set")
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b,
                         transpose: bool = False):
    """(weight, bias) Parameters of the convolution fused with the batch norm of running
    statistics bn_rm / bn_rv, eps and affine bn_w / bn_b (None: 1 and 0); conv_b None: 0."""
    conv_weight_dtype, conv_bias_dtype = conv_w.dtype, (conv_b if conv_b is not None
                                                        else conv_w).dtype
    with no_grad():
        if conv_b is None:
            conv_b = zeros_like(bn_rm)
        if bn_w is None:
            bn_w = zeros_like(bn_rm) + 1
        if bn_b is None:
            bn_b = zeros_like(bn_rm)
        bn_var_rsqrt = (bn_rv + bn_eps).rsqrt()
        shape = [1] * conv_w.ndim
        shape[1 if transpose else 0] = -1
        fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(conv_weight_dtype)
        fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(conv_bias_dtype)
    return (Parameter(fused_w, conv_w.requires_grad),
            Parameter(fused_b, conv_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` computing linear followed by `bn` (both in eval mode). Raises
    AssertionError otherwise, or when bn's features differ from linear's outputs and are not
    1 (broadcast)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             "bn.num_features == 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("running_mean and running_var must be set")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the linear layer fused with the batch norm (linear_b
    None: 0)."""
    with no_grad():
        if linear_b is None:
            linear_b = zeros_like(bn_rm)
        bn_scale = bn_w * (bn_rv + bn_eps).rsqrt()
        fused_w = linear_w * bn_scale.unsqueeze(-1)
        fused_b = (linear_b - bn_rm) * bn_scale + bn_b
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, linear_b.requires_grad))
