"""EC2 instance types as CLM's templates see them (pkg/aws/instance_info.go): `.Values.InstanceInfo` of a node pool
(VCPU, Memory, Architecture, AvailableStorage, MemoryFraction) and `instanceTypeCPUQuantity`/`MemoryQuantity`, from
DescribeInstanceTypes output (clm.render.lookups fetches it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from clm.render.quantities import binary_quantity

MEBIBYTE = 1024 * 1024
GIGABYTE = 1000 * 1000 * 1000  # DescribeInstanceTypes' SizeInGB is decimal
ARCHITECTURES = (("x86_64", "amd64"), ("arm64", "arm64"))  # CLM's choice, in order; other types are skipped
MULTIPLE = "<multiple>"


@dataclass(frozen=True)
class InstanceInfo:
    """pkg/aws.Instance, with CLM's field and method names (templates call them)."""

    InstanceType: str
    VCPU: int
    Memory: int
    InstanceStorageDevices: int
    InstanceStorageDeviceSize: int
    Architecture: str

    def AvailableStorage(  # noqa: N802
        self, instance_storage_scale: float, root_volume_size: int, root_volume_scale: float
    ) -> int:
        """Usable local storage in bytes: the instance storage scaled, or without any the root volume scaled."""
        if self.InstanceStorageDevices == 0:
            return int(float(root_volume_size) * root_volume_scale)
        return int(instance_storage_scale * float(self.InstanceStorageDevices * self.InstanceStorageDeviceSize))

    def MemoryFraction(self, percent: int) -> int:  # noqa: N802
        """`percent` of the memory, in bytes (Go's integer division)."""
        product = percent * self.Memory
        return abs(product) // 100 * (1 if product >= 0 else -1)


def from_describe(info: Mapping[str, Any]) -> InstanceInfo | None:
    """An InstanceInfo from one DescribeInstanceTypes entry; None for an architecture CLM does not support."""
    supported = info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    architecture = next((ours for theirs, ours in ARCHITECTURES if theirs in supported), None)
    if architecture is None:
        return None
    disks = (info.get("InstanceStorageInfo") or {}).get("Disks") or []
    if len(disks) > 1:
        raise ValueError(f"invalid number of disk sets ({len(disks)}) for {info['InstanceType']}, expecting 0 or 1")
    return InstanceInfo(
        InstanceType=info["InstanceType"],
        VCPU=int(info["VCpuInfo"]["DefaultVCpus"]),
        Memory=int(info["MemoryInfo"]["SizeInMiB"]) * MEBIBYTE,
        InstanceStorageDevices=int(disks[0].get("Count", 0)) if disks else 0,
        InstanceStorageDeviceSize=int(disks[0].get("SizeInGB", 0)) * GIGABYTE if disks else 0,
        Architecture=architecture,
    )


class InstanceTypes:
    """Known instance types by name (pkg/aws.InstanceTypes)."""

    def __init__(self, infos: Iterable[InstanceInfo] = ()):
        self._infos = {info.InstanceType: info for info in infos}

    def add(self, infos: Iterable[InstanceInfo]) -> None:
        """Learn more types."""
        self._infos.update((info.InstanceType, info) for info in infos)

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def info(self, name: str) -> InstanceInfo:
        """The type's info; ValueError for a type EC2 does not describe (or of an unsupported architecture)."""
        try:
            return self._infos[name]
        except KeyError:
            raise ValueError(f"unknown instance type: {name}") from None

    def synthetic(self, names: list[str]) -> InstanceInfo:
        """SyntheticInstanceInfo: one type's info, or for several the least of each amount (the first's
        architecture), named `<multiple>`."""
        if not names:
            raise ValueError("no instance types provided")
        infos = [self.info(name) for name in names]
        if len(infos) == 1:
            return infos[0]
        return InstanceInfo(
            InstanceType=MULTIPLE,
            VCPU=min(info.VCPU for info in infos),
            Memory=min(info.Memory for info in infos),
            InstanceStorageDevices=min(info.InstanceStorageDevices for info in infos),
            InstanceStorageDeviceSize=min(info.InstanceStorageDeviceSize for info in infos),
            Architecture=infos[0].Architecture,
        )

    def cpu_quantity(self, name: str) -> str:
        """instanceTypeCPUQuantity: the vCPUs as a quantity (`2`)."""
        return str(self.info(name).VCPU)

    def memory_quantity(self, name: str) -> str:
        """instanceTypeMemoryQuantity: the memory as a binary quantity (`8Gi`)."""
        return binary_quantity(self.info(name).Memory)
