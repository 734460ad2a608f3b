"""`clm encrypt` and `clm registry reencrypt` on in-process moto: ciphertexts bound to their cluster and item, and
the migration of Zalando CLM's (made without encryption context) by KMS ReEncrypt."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from clm.errors import RenderError
from clm.render.secrets import KMS_PREFIX, KmsDecrypter, encryption_context
from tests.unit.test_cli_helpers import KUBE_1, KUBE_2, clm  # noqa: F401  (the `clm` fixture)

SECRET = "pw: 'x' #1\n"


@pytest.fixture
def key(aws) -> str:
    """A KMS key, named by the stand-in CLM stack's output DecryptKeyArns (as clm:decryptKeyArns makes it)."""
    arn = aws.client("kms").create_key()["KeyMetadata"]["Arn"]
    template = {
        "Resources": {"Anything": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "anything"}}},
        "Outputs": {"DecryptKeyArns": {"Value": arn}},
    }
    aws.client("cloudformation").create_stack(StackName="Clm", TemplateBody=json.dumps(template))
    return arn


def decrypted(aws, value: str, cluster_id: str | None, item: str) -> str:
    """What the render decrypts `value` to for `item` of `cluster_id` (None: of config-defaults.yaml)."""
    decrypt = KmsDecrypter(lambda: aws.client("kms"), None)
    return decrypt(KUBE_1, item, value.removeprefix(KMS_PREFIX), encryption_context(cluster_id, item))


def zalando(aws, key: str, text: str = SECRET) -> str:
    """`text` encrypted as for Zalando's CLM: `aws kms encrypt` without encryption context."""
    blob = aws.client("kms").encrypt(KeyId=key, Plaintext=text.encode())["CiphertextBlob"]
    return KMS_PREFIX + base64.b64encode(blob).decode()


def test_encrypt_binds_the_value_read_from_stdin_to_one_item_of_one_cluster(aws, clm, key):  # noqa: F811
    run = clm[0]
    value = run("encrypt", KUBE_1, "db_password", input=SECRET).output.strip()
    assert value.startswith(KMS_PREFIX)
    assert decrypted(aws, value, KUBE_1, "db_password") == SECRET  # stdin as is, its line break included
    for cluster_id, item in ((KUBE_2, "db_password"), (KUBE_1, "other"), (None, "db_password")):
        with pytest.raises(RenderError, match="it is not bound to this item"):
            decrypted(aws, value, cluster_id, item)
    shared = run("encrypt", "--defaults", "token", input="t0k3n").output.strip()
    assert decrypted(aws, shared, None, "token") == "t0k3n"
    with pytest.raises(RenderError, match=r"clm:cluster-id=\*, clm:config-item=other\)"):
        decrypted(aws, shared, None, "other")


def test_encrypt_names_what_it_needs(aws, clm):  # noqa: F811
    run = clm[0]

    def refused(*args: str) -> str:
        return str(run(*args, ok=False, input="x").exception)

    assert refused("encrypt", KUBE_1) == "give CLUSTER_ID and ITEM, or --defaults and ITEM"
    assert refused("encrypt", "--defaults", KUBE_1, "i") == "give CLUSTER_ID and ITEM, or --defaults and ITEM"
    assert refused("encrypt", KUBE_1, "i").startswith("stack Clm not found")
    other = aws.client("kms").create_key()["KeyMetadata"]["Arn"]
    value = run("encrypt", "--key", other, KUBE_1, "i", input="x").output.strip()
    assert decrypted(aws, value, KUBE_1, "i") == "x"


def test_encrypt_reencrypt_binds_a_zalando_ciphertext_without_the_plaintext(aws, clm, key):  # noqa: F811
    run = clm[0]
    old = zalando(aws, key)
    value = run("encrypt", "--reencrypt", KUBE_1, "db_password", input=old + "\n").output.strip()
    assert decrypted(aws, value, KUBE_1, "db_password") == SECRET
    refused = run("encrypt", "--reencrypt", KUBE_1, "i", ok=False, input="pw").exception
    assert str(refused) == "--reencrypt reads an aws:kms: value on standard input"


def test_registry_reencrypt_binds_the_registrys_zalando_ciphertexts_and_names_the_others(aws, clm, key):  # noqa: F811
    run, store = clm
    legacy, bound = zalando(aws, key), run("encrypt", KUBE_1, "bound", input="b").output.strip()
    foreign = run("encrypt", KUBE_2, "foreign", input="f").output.strip()  # kube-2's, pasted into kube-1
    kube1 = store.get(KUBE_1)
    items = {**kube1.config_items, "legacy": legacy, "bound": bound, "foreign": foreign}
    pools = [dataclasses.replace(kube1.node_pools[0], config_items={"own": legacy})]  # pools' own: never decrypted
    store.put(dataclasses.replace(kube1, config_items=items, node_pools=pools))
    before = store.get(KUBE_1)

    dry = run("-o", "json", "registry", "reencrypt", "--dry-run", KUBE_1, ok=False)
    rows = json.loads(dry.output)
    assert rows == [
        {"cluster": KUBE_1, "item": "bound", "outcome": "already bound"},
        {
            "cluster": KUBE_1,
            "item": "foreign",
            "outcome": "refused (InvalidCiphertextException): made for another cluster or item",
        },
        {"cluster": KUBE_1, "item": "legacy", "outcome": "would bind"},
    ]
    assert str(dry.exception) == f"not bound: {KUBE_1} foreign (see the table)"
    assert store.get(KUBE_1).spec_dict() == before.spec_dict()

    done = run("registry", "reencrypt", ok=False)  # every cluster
    assert "bound 1 of 3 encrypted items" in " ".join(done.output.split())
    after = store.get(KUBE_1)
    assert decrypted(aws, after.config_items["legacy"], KUBE_1, "legacy") == SECRET
    assert {name: after.config_items[name] for name in ("bound", "foreign")} == {"bound": bound, "foreign": foreign}
    assert after.node_pools[0].config_items == {"own": legacy}
    assert store.get(KUBE_2).spec_dict() == clm[1].get(KUBE_2).spec_dict()
    assert "bound 0 of 3" in " ".join(run("registry", "reencrypt", ok=False).output.split())  # again: nothing to do


def test_replace_config_item_writes_only_over_the_value_it_read(clm):  # noqa: F811
    store = clm[1]
    assert store.replace_config_item(KUBE_1, "app_replicas", "3", "4")
    assert not store.replace_config_item(KUBE_1, "app_replicas", "3", "5")  # changed meanwhile: left
    assert not store.replace_config_item(KUBE_1, "absent", "3", "5")
    assert store.get(KUBE_1).config_items == {"app_replicas": "4", "drain_grace_period": "6h"}
