"""2^x on the FMA pipe, for a share of the online softmax's exponentials (``attention_sm90``'s ``poly_exp2``).

A Hopper SM computes 16 MUFU.EX2 results a clock (a warp's in 8 issue cycles of its quarter) and 128 FP32 results
(a warp's in one): the softmax of a 64 x 128 tile, one exp2 a score, spends ~512 cycles a warp on MUFU alone while
its other instructions issue in ~200. Evaluating every k-th exp2 as ``8`` FP32/integer instructions moves work from
the busy unit to the idle one. x = n + f with n the nearest integer (|f| <= 1/2): 2^f is a cubic, and n is added to
its exponent bits. For -inf (a masked score) it gives 2^-125, or 0 with ``zero_below``.
"""

from __future__ import annotations

from cutlass import Float32, Int32, select_
from cutlass._mlir.dialects import llvm
from cutlass.cute import arch
from cutlass.cutlass_dsl import T

#: 2^f for f in [-1/2, 1/2], lowest degree first: 7.5e-5 largest relative error (float32 Horner), fitted to the
#: least largest relative error; the P it feeds is stored in 16 bits (2^-11 relative at fp16).
EXP2_CUBIC = (0.9999281764030457, 0.6932609677314758, 0.24260970950126648, 0.05517097935080528)
#: Adding 1.5 x 2^23 to a float32 of magnitude under 2^22 rounds it to an integer held in the low mantissa bits.
_ROUND = 1.5 * 2**23
#: The clamp: 2^-125 keeps the exponent field positive after n is added to a cubic's exponent (126 or 127).
_LOWEST = -125.0


def _bits(x: Float32) -> Int32:
    return Int32(llvm.bitcast(T.i32(), Float32(x).ir_value()))


def _float(bits: Int32) -> Float32:
    return Float32(llvm.bitcast(T.f32(), Int32(bits).ir_value()))


def exp2_fma(x: Float32, *, zero_below: bool = False) -> Float32:
    """2^x to 7.5e-5 relative for x <= 2^22 in FP32 and integer instructions only: a clamp, three adds, three FMAs
    and one shift-add (LEA); no MUFU. Below -125 (and for -inf) the result is 2^-125, or with ``zero_below`` 0
    (a compare and a select more: what a masked score needs, so that a row that sees no key sums to 0)."""
    clamped = arch.fmax(x, _LOWEST)
    rounded = clamped + _ROUND  # n in the low bits (round to nearest)
    f = clamped - (rounded - _ROUND)
    p = Float32(EXP2_CUBIC[3])
    for c in EXP2_CUBIC[2::-1]:
        p = p * f + c
    out = _float((_bits(rounded) << 23) + _bits(p))
    if zero_below:
        out = Float32(select_(x < _LOWEST, Float32(0.0), out))
    return out


__all__ = ["EXP2_CUBIC", "exp2_fma"]
