"""Karpenter's CustomResourceDefinitions for the sandbox's control plane: NodePool and NodeClaim
(karpenter.sh) and EC2NodeClass (karpenter.k8s.aws), v1 (stored) and v1beta1 (served, for configurations
written against Karpenter 0.3x such as Zalando's).

Trimmed from the shapes of Karpenter's published CRDs (github.com/aws/karpenter-provider-aws, Apache License
2.0): names, scope, status subresource and the fields the sandbox and CLM rely on are checked (v1: a NodePool's
template needs a nodeClassRef with group, kind and name, and requirements with key and operator); everything
else is kept as given (x-kubernetes-preserve-unknown-fields). Their CEL rules (x-kubernetes-validations) are left
out: kube-apiserver 1.20 does not know them.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

KARPENTER_GROUP = "karpenter.sh"
AWS_GROUP = "karpenter.k8s.aws"
VERSION = "v1"
OPEN: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _object(required: list[str] | None = None, **properties: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {**OPEN, "properties": properties}
    if required:
        schema["required"] = required
    return schema


_STRING = {"type": "string"}
_NODE_CLASS_REF = _object(["group", "kind", "name"], group=_STRING, kind=_STRING, name=_STRING)
_REQUIREMENTS = {
    "type": "array",
    "items": _object(
        ["key", "operator"],
        key=_STRING,
        operator={"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]},
        values={"type": "array", "items": _STRING},
    ),
}
_TAINTS = {"type": "array", "items": _object(["key", "effect"], key=_STRING, value=_STRING, effect=_STRING)}
_CLAIM_SPEC = _object(
    ["nodeClassRef", "requirements"],
    nodeClassRef=_NODE_CLASS_REF,
    requirements=_REQUIREMENTS,
    taints=_TAINTS,
    startupTaints=_TAINTS,
)
_CONDITIONS = {"type": "array", "items": OPEN}
_SPECS = {
    "NodePool": _object(["template"], template=_object(["spec"], metadata=OPEN, spec=_CLAIM_SPEC)),
    "NodeClaim": _CLAIM_SPEC,
    "EC2NodeClass": _object(amiSelectorTerms={"type": "array", "items": OPEN}, tags=OPEN, userData=_STRING),
}
_STATUSES = {
    "NodePool": _object(conditions=_CONDITIONS),
    "NodeClaim": _object(
        providerID=_STRING, imageID=_STRING, nodeName=_STRING, capacity=OPEN, allocatable=OPEN, conditions=_CONDITIONS
    ),
    "EC2NodeClass": _object(conditions=_CONDITIONS),
}


def _crd(group: str, kind: str, plural: str, short_names: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": _SPECS[kind], "status": _STATUSES[kind]}}
    if kind != "EC2NodeClass":
        schema["required"] = ["spec"]
    versions = [
        {"name": VERSION, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}},
        {"name": "v1beta1", "served": True, "storage": False, "schema": {"openAPIV3Schema": OPEN}},
    ]
    for version in versions:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": ["karpenter"],
            },
            "versions": versions,
        },
    }


def karpenter_crds() -> list[dict[str, Any]]:
    """The three CRDs, as API dicts."""
    return [
        _crd(AWS_GROUP, "EC2NodeClass", "ec2nodeclasses", ["ec2nc", "ec2ncs"]),
        _crd(KARPENTER_GROUP, "NodeClaim", "nodeclaims", []),
        _crd(KARPENTER_GROUP, "NodePool", "nodepools", []),
    ]


def install_karpenter_crds(api_client: client.ApiClient, timeout: float = 30.0) -> None:
    """Create (or replace) the CRDs and wait until the API server serves them (Established)."""
    api = client.ApiextensionsV1Api(api_client)
    for crd in karpenter_crds():
        name = crd["metadata"]["name"]
        try:
            api.create_custom_resource_definition(crd)
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = api.read_custom_resource_definition(name)
            crd["metadata"]["resourceVersion"] = current.metadata.resource_version
            api.replace_custom_resource_definition(name, crd)
    deadline = time.monotonic() + timeout
    for crd in karpenter_crds():
        name = crd["metadata"]["name"]
        while not _established(api.read_custom_resource_definition(name)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established after {timeout:.0f} s")
            time.sleep(0.1)


def _established(crd: Any) -> bool:
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


def remove_karpenter_objects(api_client: client.ApiClient) -> None:
    """Delete every NodeClaim, NodePool and EC2NodeClass: what a test sharing the control plane leaves must not be
    picked up by the next one's Karpenter stand-in."""
    custom = client.CustomObjectsApi(api_client)
    for group, plural in (
        (KARPENTER_GROUP, "nodeclaims"),
        (KARPENTER_GROUP, "nodepools"),
        (AWS_GROUP, "ec2nodeclasses"),
    ):
        for item in custom.list_cluster_custom_object(group, VERSION, plural)["items"]:
            custom.delete_cluster_custom_object(group, VERSION, plural, item["metadata"]["name"])
