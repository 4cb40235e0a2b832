"""The README's usage example runs as written, and its compiled function equals eager."""

from __future__ import annotations

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_matches_eager(capsys):
    block = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    ns: dict = {}
    exec(compile(block, str(README), "exec"), ns)
    args = [ns[k] for k in ("x", "w1", "b1", "w2", "b2")]
    got = ns["mlp"](*args)
    want = ns["mlp"].__wrapped__(*args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    out = capsys.readouterr().out
    assert f"eager.Size({list(want.shape)})" in out
    assert "1 graph(s), 0 graph break(s)" in out
