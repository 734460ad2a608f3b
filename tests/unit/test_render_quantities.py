"""Kubernetes quantities as k8s.io/apimachinery's resource.Quantity parses and prints them (the canonical form
`kubectl` shows), which CLM's sumQuantities and scaleQuantity return."""

from __future__ import annotations

import pytest

from clm.render.quantities import binary_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0", "0"),
        ("0n", "0"),
        ("1", "1"),
        ("+1", "1"),
        ("1000", "1k"),
        ("1024", "1024"),
        ("1000m", "1"),
        ("0.5", "500m"),
        ("1.", "1"),
        (".5", "500m"),
        ("1.1n", "2n"),  # finer than 1n: rounded up
        ("1Ki", "1Ki"),
        ("1.5Gi", "1536Mi"),
        ("0.1Ki", "102400m"),  # BinarySI below 1024: printed as DecimalSI
        ("1536Ki", "1536Ki"),
        ("-1Ki", "-1Ki"),
        ("1e3", "1e3"),
        ("1E", "1E"),
        ("12Ei", "12Ei"),
        ("1M", "1M"),
        ("1500k", "1500k"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize("text", ["", ".", "1.2.3", "1Gb", "abc", "1 Gi", "Ki", "1K"])
def test_not_a_quantity(text: str) -> None:
    with pytest.raises(ValueError, match=r"quantities must match|unable to parse quantity"):
        parse_quantity(text)


def test_memory_of_an_instance_type() -> None:
    """instanceTypeMemoryQuantity: NewQuantity(bytes, BinarySI).String()."""
    assert binary_quantity(8192 * 1024 * 1024) == "8Gi"
    assert binary_quantity(130996502528) == "122Gi"  # i3.4xlarge: 124928 MiB
    assert binary_quantity(3 * 512 * 1024 * 1024) == "1536Mi"
    assert binary_quantity(1000) == "1k"  # below 1024: DecimalSI
