"""Run Triton 3.6's interpreter under NumPy >= 2.4 (test helper, not part of iosim).

NumPy 2.4 refuses int() of a one-element array, which the interpreter of Triton 3.6 does for
every loop bound (`for i in range(lo, hi)` with runtime bounds): triton-lang/triton#9171,
fixed upstream after 3.6 by squeezing the array first. This applies that fix when needed.
"""

from __future__ import annotations

from typing import Any


def patch_interpreter() -> None:
    import numpy as np
    import triton.runtime.interpreter as interpreter

    if getattr(interpreter, "_iosim_patched", False):
        return
    if tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 4):
        return
    original = interpreter._patch_lang_tensor

    def patched(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patched
    interpreter._iosim_patched = True
