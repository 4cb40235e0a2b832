"""Generated code and CPython 3.13's two-local instructions (issue 13, fuzzer seed 1 cases 5
and 225): `LOAD_FAST_LOAD_FAST`, `STORE_FAST_STORE_FAST` and `STORE_FAST_LOAD_FAST` pack two
local indices in 4 bits each. A resume function puts its `___stack` arguments before the
original's locals, so an index can pass 15; encoded with an EXTENDED_ARG, CPython reads other
slots (a store into the wrong local, then a read of an unset one: SIGSEGV or a wrong value).
Each function here runs plainly and compiled, in a subprocess so that a crash fails the test."""

import dis
import subprocess
import sys
import textwrap

import pytest

import capture
import eager
from capture import verify

# many locals before the ones the resumed code reads in pairs, and a break (a list argument's
# append) with values on the stack, so the resume function has ___stack arguments
SOURCE = textwrap.dedent("""
    import eager, capture

    def unpack_after_break(x, y, log, obj):
        n = 0
        k = x.shape[0]
        t0 = x + y
        cnt = 0
        s = 0.0
        t1 = x * 0.5
        try:
            def va(*a, **kw):
                log.append((len(a), sorted(kw)))
                return a[0]
            n = va(n, k, z=1)
        except KeyError:
            pass
        def bump():
            nonlocal cnt
        a, b = x.shape
        n = n + a - b
        t0 = y * s
        return [t1, t0, k, n]

    def loop_closure(x, y, log, obj):
        n = 0
        k = x.shape[0]
        t0 = x + y
        cnt = 0
        s = 0.0
        t1 = x * 0.5
        for i1 in range(k % 4):
            log.append(s > 0)
            def bump():
                log.append(cnt)
                return cnt
            n = n + bump()
            n = n + i1
        c, e = x.shape
        u, v = y.shape
        return (t0 * c + t1 * e, n + u - v, list(log))
""")


@pytest.mark.parametrize("name", ["unpack_after_break", "loop_closure"])
@pytest.mark.parametrize("backend", ["eager", "llvm"])
def test_resumed_pairs_of_locals_read_the_right_slots(name, backend, tmp_path):
    script = tmp_path / "case.py"
    script.write_text(SOURCE + textwrap.dedent(f"""
        import sys
        x = eager.arange(12.).reshape(3, 4)
        y = eager.ones(3, 4) * 2
        plain = {name}(x, y, [], None)
        cf = capture.compile({name}, backend={backend!r})
        for _ in range(3):
            got = cf(x, y, [], None)
            for p, g in zip(plain, got):
                if isinstance(p, eager.Tensor):
                    assert eager.equal(p, g), (p, g)
                else:
                    assert p == g, (p, g)
        print("ok")
    """))
    r = subprocess.run([sys.executable, "-X", "faulthandler", str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


@pytest.mark.skipif(sys.version_info[:2] < (3, 13), reason="two-local instructions are 3.13's")
def test_verify_refuses_a_copy_whose_pair_of_locals_moved():
    """The `bytecode` library packs a pair of indices above 15 into other slots (v17, v18 ->
    v1, v2): check_table compares each copied instruction's locals with the original's."""
    from bytecode import Bytecode

    names = [f"v{i}" for i in range(20)]
    ns: dict = {}
    exec(f"def g({', '.join(names)}):\n    return v1 + v2\n", ns)
    original = ns["g"].__code__
    assert any(i.opname == "LOAD_FAST_LOAD_FAST" for i in dis.get_instructions(original))
    bc = Bytecode.from_code(original)
    bc.argnames = names[3:] + names[:3]  # v1, v2 now at indices 18, 19
    moved = bc.to_code()
    want = [i.opname for i in dis.get_instructions(original)]
    origin, j = [], 0
    for i in dis.get_instructions(moved):  # each copy to the next original of its opname
        if i.opname == "EXTENDED_ARG":
            continue
        k = want.index(i.opname, j) if i.opname in want[j:] else None
        origin.append(k)
        j = k + 1 if k is not None else j
    with pytest.raises(verify.BadCode, match="names"):
        verify.check_table(original, moved, origin)


def test_in_process_results_match_plain():
    """The same functions in this process (a quick check that the split keeps the values)."""
    ns: dict = {}
    exec(compile(SOURCE, "<superinstructions>", "exec"), ns)
    x = eager.arange(12.).reshape(3, 4)
    y = eager.ones(3, 4) * 2
    for name in ("unpack_after_break", "loop_closure"):
        plain = ns[name](x, y, [], None)
        got = capture.compile(ns[name], backend="eager")(x, y, [], None)
        for p, g in zip(plain, got):
            assert eager.equal(p, g) if isinstance(p, eager.Tensor) else p == g
