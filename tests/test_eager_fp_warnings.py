"""IEEE results without numpy's RuntimeWarnings (as PyTorch) on eager's direct kernel calls:
the elementwise fast paths, backward programs and the optimizers' array path.

Run in a fresh interpreter with RuntimeWarnings as errors: pytest's warning capture drops
filters that modules install at import, so in-process checks would not see them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np
    import eager

    x = eager.ones(3)
    q, lg = x / 0, eager.log(-x)
    assert np.isinf(q.numpy()).all() and np.isnan(lg.numpy()).all()
    for _ in range(4):  # (the third and later backward passes run a program)
        a = eager.tensor([0.0, 4.0], requires_grad=True)
        eager.sqrt(a).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), np.array([np.inf, 0.25], np.float32))
    print("ok")
""")


def test_direct_kernels_give_ieee_results_without_warnings():
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", SCRIPT],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok"
