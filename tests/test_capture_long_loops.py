"""Loops whose body is longer than 255 bytes of bytecode: the loop's backward jump targets the
EXTENDED_ARG prefix of its head. Capture crashed on them (KeyError in the loop scan) and the
call silently ran eagerly with 0 graphs; now they capture as any loop does. Checked against the
plain Python run and on the bytecode itself (the jump target really is an EXTENDED_ARG)."""

import dis

import numpy as np

import capture
import eager


def long_loop(x):
    for _ in range(3):
        y = x * 1.0
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        x = y * 0.1
    return x


def long_loop_with_break(x, log):
    for i in range(2):
        y = x * 1.0
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        y = y + 2.0 * x - x / 3.0 + x.sin() * 0.5 - x.cos() + x.exp() * 0.01
        print("step", i, file=log)
        x = y * 0.1
    return x


def test_the_jump_targets_an_extended_arg():
    ins = list(dis.get_instructions(long_loop))
    by_offset = {i.offset: i for i in ins}
    back = [i for i in ins if i.opname.startswith("JUMP_BACKWARD")]
    assert back and by_offset[back[0].argval].opname == "EXTENDED_ARG"


def test_long_loop_captures_and_matches():
    x = eager.randn(5, dtype=eager.float64)
    want = long_loop(x)
    r = capture.explain(long_loop)(x)
    assert r.graph_count == 1 and r.graph_break_count == 0
    np.testing.assert_allclose(capture.compile(long_loop)(x).numpy(), want.numpy(),
                               rtol=1e-12)


def test_long_loop_with_a_break_resumes():
    import io

    x = eager.randn(4, dtype=eager.float64)
    a, b = io.StringIO(), io.StringIO()
    want = long_loop_with_break(x, a)
    got = capture.compile(long_loop_with_break)(x, b)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert a.getvalue() == b.getvalue()
