"""Settings of capture (TorchDynamo's `torch._dynamo.config`, in miniature).

Read by the interpreter and the cache on every compile; tests may set them. Touches nothing.
"""

cache_size_limit = 8  # cache entries per compiled function before new variants run eagerly
dynamic_shape_limit = 64  # shapes compiled per dynamic entry before new shapes run eagerly
# a dynamic entry compiles a new shape (or KV-cache position) on its Nth call; the calls before
# run the entry's op tape eagerly (`dynamic.Specializations.run_tape`): a decode meets each
# position once per generation, where a compile costs ~50x the step it serves
dynamic_compile_after = 2
inline_depth_limit = 32  # nested inlined calls before a graph break
instruction_limit = 100_000  # symbolically executed instructions per capture (unrolled loops)
debug = False  # check each instruction's symbolic stack effect against dis.stack_effect
