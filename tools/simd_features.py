"""Print the SIMD features numpy dispatches to on this CPU beyond its baseline (say,
``X86_V3 X86_V4 AVX512_ICL AVX512_SPR``), for ``NPY_DISABLE_CPU_FEATURES``: with all of
them disabled numpy runs its baseline kernels, which sum in another order, as another
CPU would. Prints nothing when numpy dispatches to nothing here."""

from __future__ import annotations

try:  # numpy 2
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # numpy 1.26
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

if __name__ == "__main__":
    print(" ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f)))
