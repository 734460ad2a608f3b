"""Kubernetes resource quantities as k8s.io/apimachinery's resource.Quantity parses, adds and prints them, for CLM's
`sumQuantities`, `scaleQuantity`, `kubernetesSizeToKiloBytes` and `instanceTypeMemoryQuantity`
(provisioner/template.go).

A quantity is an exact value and a format (DecimalSI `1500m` `2k`, BinarySI `1536Mi`, DecimalExponent `1e3`);
parsing rounds a value finer than 1n up (away from zero), printing gives the canonical form: the largest suffix
of the format that keeps the number whole (BinarySI below 1024 or with a fraction prints as DecimalSI).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from fractions import Fraction

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {0: "", **{bits: suffix for suffix, bits in _BINARY.items()}}
_NUMBER = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?\d{1,10})")
# Go keeps `1e2000000000` as a scaled decimal; here the value is exact, so an exponent is bounded (no resource
# is near 1e100: an int64 holds 9.2e18).
MAX_EXPONENT = 100
_NANO = Fraction(1, 10**9)
_FORMAT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"  # resource.ErrFormatWrong's


@dataclass(frozen=True)
class Quantity:
    """An exact value and the format it prints in."""

    value: Fraction
    format: str = DECIMAL_SI

    def scaled(self, scale: int) -> int:
        """resource.Quantity.ScaledValue: the value in units of 10^scale, rounded up (away from zero)."""
        units = self.value / Fraction(10) ** scale
        whole = math.ceil(abs(units))
        return whole if units >= 0 else -whole

    def __str__(self) -> str:
        """The canonical text (resource.Quantity.String)."""
        if self.value == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (-1024 < self.value < 1024 or self.value.denominator != 1):
            fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            amount, bits = int(self.value), 0
            while amount % 1024 == 0 and bits < 60:
                amount, bits = amount // 1024, bits + 10
            return f"{amount}{_BINARY_SUFFIX[bits]}"
        amount, exponent = _decimal_parts(self.value)
        if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIX:
            return f"{amount}{_DECIMAL_SUFFIX[exponent]}"
        return f"{amount}e{exponent}" if exponent else str(amount)


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with value = mantissa * 10^exponent, the exponent a multiple of 3 and as large as
    keeps the mantissa whole (AsCanonicalBytes). The value has at most 9 decimals (parsing rounds to 1n)."""
    amount, exponent = int(value * 10**9), -9
    while amount and amount % 10 == 0:
        amount, exponent = amount // 10, exponent + 1
    while exponent % 3:
        amount, exponent = amount * 10, exponent - 1
    return amount, exponent


def parse_quantity(text: str) -> Quantity:
    """resource.ParseQuantity: `[+-]digits[.digits]suffix`; a ValueError for anything else."""
    match = _NUMBER.fullmatch(str(text))
    sign, whole, fraction, suffix = match.groups() if match else ("", "", None, "")
    if not match or not (whole or fraction):
        raise ValueError(f"quantities must match the regular expression {_FORMAT!r}: {text!r}")
    number = Fraction(int(whole or "0")) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
    if suffix in _DECIMAL:
        fmt, value = DECIMAL_SI, number * Fraction(10) ** _DECIMAL[suffix]
    elif suffix in _BINARY:
        fmt, value = BINARY_SI, number * 2 ** _BINARY[suffix]
    elif exponent := _EXPONENT.fullmatch(suffix):
        if abs(int(exponent.group(1))) > MAX_EXPONENT:
            raise ValueError(f"quantity {text[:40]!r}: an exponent beyond ±{MAX_EXPONENT} is refused here")
        fmt, value = DECIMAL_EXPONENT, number * Fraction(10) ** int(exponent.group(1))
    else:
        raise ValueError(f"unable to parse quantity's suffix: {text!r}")
    if value:
        value = math.ceil(value / _NANO) * _NANO  # finer than 1n: rounded up to 1n
    if fmt == BINARY_SI and 0 < value < 1:
        fmt = DECIMAL_SI
    return Quantity(-value if sign == "-" else value, fmt)


def sum_quantities(*quantities: str) -> str:
    """CLM's sumQuantities: the sum, in the format of the first quantity added to a zero sum."""
    total = Quantity(Fraction(0), "")
    for text in quantities:
        quantity = parse_quantity(text)
        fmt = quantity.format if total.value == 0 else total.format
        total = Quantity(total.value + quantity.value, fmt)
    return str(total)


def _float32(value: float) -> float:
    """Go's float32(value): rounded to single precision."""
    return struct.unpack("f", struct.pack("f", value))[0]


def scale_quantity(quantity: str, factor: float) -> str:
    """CLM's scaleQuantity: a quantity times a factor (> 0) in float32 arithmetic; a DecimalSI quantity below
    1024 scales in millis (CPU), any other in whole units (memory), truncated, keeping its format."""
    factor = _float32(float(factor))
    if factor <= 0:
        raise ValueError("scaling factor must be greater than 0.0")
    try:
        parsed = parse_quantity(quantity)
    except ValueError as exc:
        raise ValueError(f"failed to parse {quantity} as k8sresource.Quantity: {exc}") from None
    if parsed.scaled(0) < 1024 and parsed.format == DECIMAL_SI:
        millis = int(_float32(_float32(parsed.scaled(-3)) * factor))
        return str(Quantity(Fraction(millis, 1000), parsed.format))
    return str(Quantity(Fraction(int(_float32(_float32(parsed.scaled(0)) * factor))), parsed.format))


def binary_quantity(amount: int) -> str:
    """resource.NewQuantity(amount, BinarySI).String(): bytes as `8Gi`."""
    return str(Quantity(Fraction(amount), BINARY_SI))


def kubernetes_size_to_kilo_bytes(quantity: str, scale: float) -> str:
    """CLM's kubernetesSizeToKiloBytes: a whole quantity of bytes (fitting an int64) times `scale`, in kilobytes
    rounded up: `1Gi`, 0.5 -> `524288KB`. A result that no int64 holds is an error (Go's conversion is undefined)."""
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise ValueError(f"kubernetesSizeToKiloBytes: scale must be a number, got {scale!r}")
    value = parse_quantity(quantity).value
    if value.denominator != 1 or not -(2**63) <= value < 2**63:
        raise ValueError(f"unexpected size for quantity: {quantity}")
    kilobytes = float(value) / 1024 * float(scale)
    if not math.isfinite(kilobytes) or not -(2**63) <= math.ceil(kilobytes) < 2**63:
        raise ValueError(f"kubernetesSizeToKiloBytes: {quantity} times {scale} is more kilobytes than an int64 holds")
    return f"{math.ceil(kilobytes)}KB"
