"""KMS-encrypted config items (`aws:kms:<base64>`, CLM's pkg/decrypter) on the sandbox, IAM enforced: the CDK app
names one key (`clm:decryptKeyArns`); the deployed run function decrypts an item encrypted with it for the cluster
and item (`clm encrypt`: the encryption context binds them) and the cluster gets the value; an item encrypted with a
key not named is refused by IAM, a ciphertext made for another cluster (pasted into this one's item) or without
context (Zalando CLM's) is refused by KMS, each run failing with a problem naming the cluster and the item; `clm
registry reencrypt` binds Zalando's, and the next run decrypts it. A template putting the value in a label makes the
API server's 422 echo it: the problem shows none of it. No clear value, nor any part of one, shows up in a payload,
a log line, the registry, the config bucket or the stored rendering's config items (the rendered manifest holds it,
as CLM applies it, in the KMS-encrypted artefact bucket)."""

from __future__ import annotations

import base64
import dataclasses
import json
import secrets

import pytest
from click.testing import CliRunner
from kubernetes import client as k8s

from clm.cli.main import cli
from clm.registry.clusters_yaml import load_clusters
from clm.render.secrets import encryption_context
from clm.scrub import MIN_FRAGMENT, PLACEHOLDER
from clm_sandbox.deploy.synth import Assembly, synthesize
from clm_sandbox.iam import record
from tests.integration.deployment import REGION, ROOT, Deployment
from tests.integration.test_no_secrets_leak import (
    HandlerOutput,
    assert_no_secret,
    bucket_objects,
    handler_output,  # noqa: F401 - the fixture
    histories,
    log_events,
    payloads,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

ACCOUNT = "123456789012"
NAMED_KEY_ID = "0e5a1c3b-7d2f-4a6e-9b8c-1f2e3d4c5b6a"
NAMED_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{NAMED_KEY_ID}"
CONFIGMAP_KEY = "config/cluster/manifests/secret-test/configmap.yaml"
LABELLED_KEY = "config/cluster/manifests/secret-test/labelled.yaml"
OTHER_CLUSTER = "aws:123456789012:eu-central-1:kube-2"  # whose ciphertext a registry writer pastes into kube-1's item
# The item in a label: not a valid label value, so the API server refuses the object and its 422 echoes the value.
LABELLED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: secret-label
  namespace: default
  labels: {password: {{ cluster.config_items.db_password | yaml }}}
"""
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: secret-test
  namespace: default
data:
  password: {{ cluster.config_items.db_password | yaml }}
"""


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """The CDK app naming one KMS key for config items (overrides the session's assembly for this module)."""
    return synthesize(tmp_path_factory.mktemp("cdk-out-kms"), "Clm", {"clm:decryptKeyArns": [NAMED_KEY]})


def create_key(deployment: Deployment, key_id: str | None, monkeypatch: pytest.MonkeyPatch) -> str:
    """A KMS key in moto; `key_id` fixes its id (the one the app names), None leaves it random."""
    import moto.kms.models

    with monkeypatch.context() as patch:
        if key_id:
            patch.setattr(moto.kms.models, "generate_key_id", lambda multi_region=False: key_id)
        return deployment.session.client("kms").create_key()["KeyMetadata"]["Arn"]


def encrypted(
    deployment: Deployment, key: str, text: str, cluster_id: str | None = None, item: str = "db_password"
) -> str:
    """`text` as `clm encrypt` makes it for `item` of `cluster_id` (default: kube-1), or, with "", as Zalando's CLM:
    without encryption context."""
    if cluster_id == "":
        context = {}
    else:
        context = {"EncryptionContext": encryption_context(cluster_id or deployment.cluster_id, item)}
    blob = deployment.session.client("kms").encrypt(KeyId=key, Plaintext=text.encode(), **context)["CiphertextBlob"]
    return "aws:kms:" + base64.b64encode(blob).decode()


def forms(*texts: str) -> dict[str, str]:
    """Each text, JSON-escaped, in base64, and each run of twice MIN_FRAGMENT of its characters (MIN_FRAGMENT hex
    digits of a secret would turn up by chance in histories full of hashes and ids)."""
    found, size = {}, 2 * MIN_FRAGMENT
    for number, text in enumerate(texts):
        found[f"secret {number}"] = text
        found[f"secret {number}, JSON-escaped"] = json.dumps(text)[1:-1]
        found[f"secret {number}, base64"] = base64.b64encode(text.encode()).decode()
        found.update({f"secret {number}[{i}:{i + size}]": text[i : i + size] for i in range(len(text) - size + 1)})
    return found


def failed_run(deployment: Deployment, item: str) -> str:
    """Register kube-1 with `item` as db_password; the run fails: its problem's title."""
    known = len(deployment.executions(deployment.provision))
    cluster = deployment.registry.get(deployment.cluster_id)
    deployment.registry.put(dataclasses.replace(cluster, config_items={**cluster.config_items, "db_password": item}))
    runs = deployment.settle(known=known)
    assert [e["status"] for e in runs] == ["FAILED"], [(e["status"], e.get("error")) for e in runs]
    return deployment.registry.get(deployment.cluster_id).status.problems[-1].title


def unbound(deployment: Deployment) -> str:
    """What a run's problem says of a ciphertext not made for kube-1's db_password."""
    return (
        f"config item db_password: cannot decrypt its aws:kms: value: KMS refused (InvalidCiphertextException): it "
        f"is not bound to this item (encryption context clm:cluster-id={deployment.cluster_id}, "
        f"clm:config-item=db_password)"
    )


@pytest.mark.iam_refusals  # the unnamed key's Decrypt, refused on purpose
def test_items_encrypted_with_a_named_key_are_decrypted_others_refused_and_nothing_leaks(
    deployment: Deployment,
    nodes: object,
    kube_api: k8s.ApiClient,
    handler_output: HandlerOutput,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert create_key(deployment, NAMED_KEY_ID, monkeypatch) == NAMED_KEY
    other_key = create_key(deployment, None, monkeypatch)
    named_secret, other_secret, pasted_secret, zalando_secret = (f"pw: '{secrets.token_hex(16)}' #x" for _ in range(4))
    s3 = deployment.session.client("s3")
    s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=CONFIGMAP_KEY, Body=CONFIGMAP.encode())
    deployment.settle()
    cluster = load_clusters((ROOT / "examples" / "clusters.yaml").read_text())[0]
    items = {**cluster.config_items, "kube_auth_secret": "clm/kube-1"}
    core = k8s.CoreV1Api(kube_api)
    try:
        deployment.registry.put(
            dataclasses.replace(
                cluster, config_items={**items, "db_password": encrypted(deployment, NAMED_KEY, named_secret)}
            )
        )
        runs = deployment.settle(known=0)
        assert all(e["status"] == "SUCCEEDED" for e in runs), [(e["status"], e.get("error")) for e in runs]
        assert core.read_namespaced_config_map("secret-test", "default").data == {"password": named_secret}

        known = len(deployment.executions(deployment.provision))
        refused_item = encrypted(deployment, other_key, other_secret)
        deployment.registry.put(dataclasses.replace(cluster, config_items={**items, "db_password": refused_item}))
        failed = [e for e in deployment.settle(known=known) if e["status"] == "FAILED"]
        assert failed, "the run with the unnamed key's item did not fail"
        problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
        assert problem.startswith("RenderError: ") and deployment.cluster_id in problem, problem
        assert (
            "config item db_password: cannot decrypt its aws:kms: value: KMS refused (AccessDeniedException" in problem
        )
        assert f"kms:Decrypt on resource: {other_key}" in problem and NAMED_KEY in problem
        assert [(j.action, j.resource) for j in record.judged() if j.refused] == [("kms:Decrypt", other_key)]
        assert core.read_namespaced_config_map("secret-test", "default").data == {"password": named_secret}

        # The attack: kube-2's ciphertext (the key is the same, IAM allows it) pasted into kube-1's item.
        problem = failed_run(deployment, encrypted(deployment, NAMED_KEY, pasted_secret, OTHER_CLUSTER))
        assert problem.startswith(f"RenderError: cluster {deployment.cluster_id}: {unbound(deployment)}"), problem
        assert core.read_namespaced_config_map("secret-test", "default").data == {"password": named_secret}

        # Zalando CLM's ciphertext (no context) is refused too, until `clm registry reencrypt` binds it.
        legacy = encrypted(deployment, NAMED_KEY, zalando_secret, "")
        problem = failed_run(deployment, legacy)
        assert unbound(deployment) in problem and "`clm registry reencrypt`" in problem, problem
        known = len(deployment.executions(deployment.provision))
        table = ["--table", deployment.outputs["RegistryTableName"], "--region", REGION]
        result = CliRunner().invoke(cli, [*table, "-o", "json", "registry", "reencrypt", deployment.cluster_id])
        assert result.exit_code == 0, (result.output, result.exception)
        assert json.loads(result.output) == [
            {"cluster": deployment.cluster_id, "item": "db_password", "outcome": "bound"}
        ]
        runs = deployment.settle(known=known)
        assert [e["status"] for e in runs] == ["SUCCEEDED"], [(e["status"], e.get("error")) for e in runs]
        assert core.read_namespaced_config_map("secret-test", "default").data == {"password": zalando_secret}

        # The attack: the item in a label; the API server's 422 echoes it, the problem shows none of it.
        known = len(deployment.executions(deployment.provision))
        s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=LABELLED_KEY, Body=LABELLED.encode())
        runs = deployment.settle(known=known)
        assert [e["status"] for e in runs] == ["FAILED"], [(e["status"], e.get("error")) for e in runs]
        problem = deployment.registry.get(deployment.cluster_id).status.problems[-1].title
        where = "cluster/manifests/secret-test/labelled.yaml document 1 (line 1): ConfigMap default/secret-label: 422"
        assert problem.startswith(f"ApplyError: cluster {deployment.cluster_id}: {where}"), problem
        assert f'metadata.labels: Invalid value: "{PLACEHOLDER}"' in problem, problem
        assert [(j.action, j.resource) for j in record.judged() if j.refused] == [("kms:Decrypt", other_key)]
    finally:
        core.delete_namespaced_config_map("secret-test", "default")
        s3.delete_object(Bucket=deployment.outputs["ConfigBucketName"], Key=LABELLED_KEY)

    leaks = forms(named_secret, other_secret, pasted_secret, zalando_secret)
    for machine, described, events in histories(deployment):
        for where, text in payloads(described, events):
            assert_no_secret(f"{machine} {described['name']}: {where}", text, leaks)
    assert_no_secret("the handlers' log lines", handler_output.log.getvalue(), leaks)
    printed = handler_output.printed.readouterr()
    assert_no_secret("the handlers' output", printed.out + printed.err, leaks)
    assert_no_secret("CloudWatch Logs", "\n".join(log_events(deployment.session)), leaks)
    table = deployment.outputs["RegistryTableName"]
    assert_no_secret("the registry", json.dumps(deployment.session.client("dynamodb").scan(TableName=table)), leaks)
    for key, body in bucket_objects(s3, deployment.outputs["ConfigBucketName"]).items():
        assert_no_secret(f"config {key}", body.decode(errors="replace"), leaks)
    artefacts = deployment.outputs["ArtefactBucketName"]
    renderings = bucket_objects(s3, artefacts)
    assert renderings
    for key, body in renderings.items():
        document = json.loads(body)
        assert_no_secret(f"{key}: config items", json.dumps(document["cluster"]), leaks)
        for component in document["components"]:
            if component["name"] != "secret-test":
                assert_no_secret(f"{key}: {component['name']}", json.dumps(component), leaks)
        name = key.split("@")[0]
        assert s3.head_object(Bucket=artefacts, Key=name)["ServerSideEncryption"] == "aws:kms"
