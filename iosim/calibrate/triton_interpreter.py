"""Triton 3.6's interpreter under NumPy >= 2.4: the one fix every CPU run of iosim's kernels needs.

NumPy 2.4 refuses int() of a one-element array, which the interpreter of Triton 3.6 does for
every loop bound (`for start in range(lo, hi, BLOCK_N)` with runtime bounds, as the split-KV
decode kernel has): triton-lang/triton#9171, fixed upstream after 3.6 by squeezing the array
first. `patch_interpreter` applies that fix; kernels_common.py calls it at import under
`TRITON_INTERPRET=1`, so every kernel module (and every test, dry run and benchmark that runs
one on the CPU) gets it from one place. Compiled runs never import the interpreter.
"""

from __future__ import annotations

from typing import Any


def _numpy_refuses_int_of_an_array() -> bool:
    import numpy as np

    return tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 4)


def patch_interpreter() -> None:
    """Make the interpreter's tensor `__index__` read the one element, as upstream does now;
    a no-op before NumPy 2.4 and on a second call."""
    import triton.runtime.interpreter as interpreter

    if getattr(interpreter, "_iosim_patched", False) or not _numpy_refuses_int_of_an_array():
        return
    original = interpreter._patch_lang_tensor

    def patched(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patched
    interpreter._iosim_patched = True
