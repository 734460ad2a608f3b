"""Zalando's own cluster/manifests/deletions.yaml (the corpus) applied with CLM's code on the v1.20.2 control plane.

The file is a Go template; `resolve_conditionals` is a test-only reading of the only template actions it uses:
`{{ if ... }}` / `{{- if ... }}` (possibly over several lines) and `{{ end }}`, with conditions made of `eq`, `ne`,
`or`, `and` over `.Cluster.ConfigItems.<name>` and string literals. A later issue writes the real translator.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from clm.kube.client import KubeClient
from clm.kube.deletions import run_deletions
from clm.kube.errors import KubeApiError
from clm.render.deletions import Deletion, parse_deletions

CORPUS = Path(os.environ.get("CLM_CORPUS") or Path(__file__).resolve().parents[3] / "shared" / "corpus")
DELETIONS = CORPUS / "kubernetes-on-aws" / "cluster" / "manifests" / "deletions.yaml"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DELETIONS.is_file(), reason=f"Zalando's configuration is not at {DELETIONS}"),
]
ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
ITEM = ".Cluster.ConfigItems."
# Every conditional section of the file true: each of its entries is named.
EVERYTHING_RETIRED = {
    "teapot_admission_controller_process_resources": "true",
    "prometheus_remote_write": "disabled",
    "network_monitoring_check_unschedulable_nodes": "true",
    "audittrail_nakadi_url": "",
    **dict.fromkeys(
        [
            "downscaler_enabled",
            "spot_node_rescheduler",
            "skipper_ingress_canary_enabled",
            "skipper_routesrv_enabled",
            "skipper_oauth2_ui_login",
            "network_monitoring_separate_prometheus",
            "network_monitoring_enabled",
            "network_monitoring_check_kubenurse_ingress",
            "network_monitoring_check_kubenurse_service",
            "karpenter_pools_enabled",
            "skipper_open_policy_agent_enabled",
            "hyped_article_lifecycle_management",
            "business_partner_service",
            "config_provider_service",
            "kubelet_summary_metrics_enabled",
            "aws_cloud_controller_manager_enabled",
            "s3_csi_driver",
            "kube_node_ready_enabled",
        ],
        "false",
    ),
}


def _evaluate(tokens: list[str], items: dict[str, str]) -> Any:
    """Evaluate one Go template pipeline `fn arg...` (args: `( ... )`, a string literal, a config item)."""
    function, args = tokens.pop(0), []
    while tokens and tokens[0] != ")":
        token = tokens.pop(0)
        if token == "(":
            args.append(_evaluate(tokens, items))
            tokens.pop(0)  # ")"
        elif token.startswith(ITEM):
            args.append(items.get(token.removeprefix(ITEM), ""))  # a missing map key is the zero value
        else:
            args.append(token)
    operations = {
        "eq": lambda a, b: a == b,
        "ne": lambda a, b: a != b,
        "or": lambda *a: any(a),
        "and": lambda *a: all(a),
    }
    return operations[function](*args)


def resolve_conditionals(text: str, items: dict[str, str]) -> str:
    """The template's text with each `if` section kept or dropped by its condition over `items`."""
    kept, stack, position = [], [True], 0
    for action in ACTION.finditer(text):
        if all(stack):
            kept.append(text[position : action.start()])
        position = action.end()
        words = action.group(1)
        if words == "end":
            stack.pop()
        else:
            assert words.startswith("if "), f"unsupported template action {words!r}"
            tokens = shlex.split(words.removeprefix("if ").replace("(", " ( ").replace(")", " ) "))
            stack.append(bool(_evaluate(tokens, items)))
    assert stack == [True], "unbalanced if/end"
    return "".join(kept) + text[position:]


def _deletions(items: dict[str, str]) -> list[Deletion]:
    parsed = parse_deletions(resolve_conditionals(DELETIONS.read_text(), items), str(DELETIONS))
    assert parsed.pre_apply == []
    return parsed.post_apply


def test_the_resolver_reads_the_conditions():
    everything = _deletions(EVERYTHING_RETIRED)
    enabled = {name: {"true": "false", "false": "true"}.get(value, value) for name, value in EVERYTHING_RETIRED.items()}
    unconditional = _deletions({**enabled, "prometheus_remote_write": "enabled", "audittrail_nakadi_url": "https://x"})
    assert len(everything) == DELETIONS.read_text().count("\n- ")  # every entry of the file
    assert len(unconditional) == 17  # the entries outside every if section: karpenter's webhooks, skipper's...
    assert Deletion(kind="CSIDriver", name="s3.csi.aws.com") in everything
    assert Deletion(kind="CSIDriver", name="s3.csi.aws.com") not in unconditional


CONTAINER = {"name": "c", "image": "registry.invalid/c:1"}
POD_TEMPLATE = {"metadata": {"labels": {"app": "retired"}}, "spec": {"containers": [CONTAINER]}}
WORKLOAD = {"selector": {"matchLabels": {"app": "retired"}}, "template": POD_TEMPLATE}
ROLE_REF = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}
# Each served kind of the file: the apiVersion to create it with and the rest of a minimal valid object.
OBJECTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ConfigMap": ("v1", {}),
    "Secret": ("v1", {}),
    "ServiceAccount": ("v1", {}),
    "Namespace": ("v1", {}),
    "Service": ("v1", {"spec": {"ports": [{"port": 80}]}}),
    "LimitRange": ("v1", {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
    "Deployment": ("apps/v1", {"spec": {"replicas": 0, **WORKLOAD}}),
    "StatefulSet": ("apps/v1", {"spec": {"replicas": 0, "serviceName": "x", **WORKLOAD}}),
    "DaemonSet": (
        "apps/v1",
        {
            "spec": {
                **WORKLOAD,
                "template": {**POD_TEMPLATE, "spec": {**POD_TEMPLATE["spec"], "nodeSelector": {"x": "y"}}},
            }
        },
    ),
    "CronJob": (
        "batch/v1beta1",
        {
            "spec": {
                "schedule": "0 0 1 1 *",
                "suspend": True,
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}}},
            }
        },
    ),
    "Ingress": (
        "networking.k8s.io/v1",
        {"spec": {"defaultBackend": {"service": {"name": "x", "port": {"number": 80}}}}},
    ),
    "HorizontalPodAutoscaler": (
        "autoscaling/v1",
        {"spec": {"maxReplicas": 1, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}}},
    ),
    "PodDisruptionBudget": ("policy/v1beta1", {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}}),
    "Role": ("rbac.authorization.k8s.io/v1", {"rules": []}),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", {"rules": []}),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", ROLE_REF),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", ROLE_REF),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", {}),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", {}),
    "CSIDriver": ("storage.k8s.io/v1", {"spec": {}}),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", {}),
}


def _body(deletion: Deletion, namespaced: bool) -> dict[str, Any]:
    api_version, rest = OBJECTS[deletion.kind]
    metadata = {"name": deletion.name, **({"namespace": deletion.namespace} if namespaced else {})}
    body = {"apiVersion": api_version, "kind": deletion.kind, "metadata": metadata, **rest}
    if deletion.kind == "CustomResourceDefinition":
        plural, _, group = str(deletion.name).partition(".")
        version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
        names = {"plural": plural, "kind": plural.capitalize()}
        body["spec"] = {"group": group, "names": names, "scope": "Namespaced", "versions": [version]}
    return body


def _create(kube: KubeClient, deletion: Deletion) -> None:
    resource = kube.discovery.resolve_kind(deletion.kind)
    assert resource is not None and deletion.name
    namespace = deletion.namespace if resource.namespaced else ""
    if namespace:
        _post(kube, "/api/v1/namespaces", {"metadata": {"name": namespace}})
    _post(kube, resource.path(namespace), _body(deletion, resource.namespaced))


def _post(kube: KubeClient, path: str, body: dict[str, Any]) -> None:
    try:
        kube.request("POST", path, body=body)
    except KubeApiError as exc:
        if exc.status != 409:  # the file names some objects twice
            raise


def test_zalandos_deletions_delete_everything_they_name(kube: KubeClient):
    deletions = _deletions(EVERYTHING_RETIRED)
    served = [d for d in deletions if kube.discovery.resolve_kind(d.kind)]
    unserved = sorted({d.kind for d in deletions} - {d.kind for d in served})
    assert unserved == ["PlatformCredentialsSet", "VerticalPodAutoscaler"]  # CRDs of Zalando's, not on this cluster
    for deletion in sorted(served, key=lambda d: d.kind != "Namespace"):
        _create(kube, deletion)

    report = run_deletions(kube, deletions, phase="post_apply")

    assert report.unknown_kinds == [d.kind for d in deletions if d not in served]
    cluster_scoped_with_namespace = [w for w in report.warnings if "is cluster-scoped" in w]
    assert len(cluster_scoped_with_namespace) == 2  # skipper-ingress ClusterRole and ClusterRoleBinding
    assert len(report.warnings) == len(report.unknown_kinds) + 2
    for deletion in served:
        resource = kube.discovery.resolve_kind(deletion.kind)
        assert resource is not None
        left = kube.get(resource.path(deletion.namespace if resource.namespaced else "", str(deletion.name)))
        assert left is None or left["metadata"].get("deletionTimestamp"), f"{deletion} is still there"
    print(f"\nZalando's deletions.yaml: {len(deletions)} entries, {report.to_dict()['count']} deleted")
