"""KMS-encrypted config items (`aws:kms:<base64>`, CLM's pkg/decrypter) decrypted at render, on moto's KMS:
only with keys the deployment names and the encryption context of their cluster and item, never kept in clear in
what is stored, never shown in error messages or warnings, not even in part (clm.scrub), from the render or from
the API server's answer to the apply (clm.sealed)."""

from __future__ import annotations

import base64
import dataclasses
import json
import urllib.parse

import pytest
import yaml

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.kube.apply import apply_manifests
from clm.kube.client import KubeClient
from clm.kube.errors import ApplyError
from clm.render import stored
from clm.render.artefacts import rendered_files
from clm.render.inputs import RenderInputs
from clm.render.renderer import Renderer
from clm.render.secrets import KMS_PREFIX, KmsDecrypter, keys_from_env
from clm.scrub import MIN_FRAGMENT, PLACEHOLDER, Scrubber
from clm.version import desired_version
from tests.unit.test_kube_client import RecordedTransport, response, status_body
from tests.unit.test_render import tree_with
from tests.unit.test_render_config_items import with_defaults_lines

SECRET = "s3cret: 'value' #1"  # YAML syntax in it: it must land only where the template quotes it
CONFIGMAP = "cluster/manifests/secret-test/configmap.yaml"
KUBE_1, KUBE_2 = "aws:123456789012:eu-central-1:kube-1", "aws:123456789012:eu-central-1:kube-2"
ITEM = "db_password"
# Longer than the 80 characters an error showed of a value, with YAML syntax (': ', ' #') past its first 77.
LONG_SECRET = "Zq7Xv-k9Lm2Wp8-Rt5Yh3Nb6-Gd4Fs1Qj0-Hx2Ck7Vz9-Mw3Pb5Tn8-Ly6Rq4Ud7Se1-Oa9Ki2: 'Gf5Zw8' #Ym3Jx4"


@pytest.fixture
def kms(aws):
    """moto's KMS: (client, key ARN named, key ARN not named)."""
    client = aws.client("kms")
    return client, client.create_key()["KeyMetadata"]["Arn"], client.create_key()["KeyMetadata"]["Arn"]


def encrypted(client, key: str, text: str = SECRET, cluster_id: str | None = KUBE_1, item: str = ITEM) -> str:
    """`text` as `clm encrypt` makes it for `item` of `cluster_id` ("*": config-defaults.yaml; None: no encryption
    context, as Zalando's CLM encrypts)."""
    context = (
        {} if cluster_id is None else {"EncryptionContext": {"clm:cluster-id": cluster_id, "clm:config-item": item}}
    )
    blob = client.encrypt(KeyId=key, Plaintext=text.encode(), **context)["CiphertextBlob"]
    return KMS_PREFIX + base64.b64encode(blob).decode()


def assert_no_fragment(text: str, secret: str) -> None:
    """No MIN_FRAGMENT characters in a row of `secret`, as it is or JSON-escaped, show in `text`."""
    for shown in (secret, json.dumps(secret)[1:-1]):
        for start in range(len(shown) - MIN_FRAGMENT + 1):
            assert shown[start : start + MIN_FRAGMENT] not in text, (shown[start : start + MIN_FRAGMENT], text)


def with_secret(cluster, value: str, **pool_items: str):
    pools = [dataclasses.replace(p, config_items={**p.config_items, **pool_items}) for p in cluster.node_pools]
    return dataclasses.replace(cluster, config_items={**cluster.config_items, "db_password": value}, node_pools=pools)


def secret_tree(example_tree, line: str = "data: {password: {{ cluster.config_items.db_password | yaml }}}"):
    configmap = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: secret-test, namespace: default}}\n{line}\n"
    return tree_with(example_tree, **{"cluster__manifests__secret-test__configmap_dot_yaml": configmap})


def test_an_encrypted_item_is_decrypted_for_the_templates_and_stored_encrypted(kms, example_tree, example_clusters):
    client, key, _ = kms
    value = encrypted(client, key, cluster_id=KUBE_2)
    cluster = with_secret(example_clusters[1], value)
    rendered = Renderer(secret_tree(example_tree), RenderInputs(KmsDecrypter(lambda: client, [key]))).render(cluster)
    configmap = next(m for c in rendered.components for m in c.manifests if m.name == "secret-test")
    assert configmap.body["data"] == {"password": SECRET}
    assert rendered.cluster.config_items["db_password"] == SECRET  # what later template-side code would see
    assert rendered.cluster.node_pool("batch").config_items["db_password"] == SECRET  # propagated decrypted
    at_rest = rendered.at_rest()
    assert at_rest.config_items["db_password"] == value
    assert {p.config_items["db_password"] for p in at_rest.node_pools} == {value}
    document = stored.dumps(rendered)
    # The rendered manifest holds it (as CLM applies it; the artefact bucket is KMS-encrypted), the items do not.
    assert "s3cret" not in json.dumps(json.loads(document)["cluster"])
    assert stored.loads(document).cluster.config_items["db_password"] == value
    assert "s3cret" not in rendered_files(rendered)["config-items.yaml"]
    assert rendered.version == str(desired_version(cluster, rendered.config_version))  # the registry's ciphertext


def test_config_defaults_items_are_decrypted_too_and_pool_items_are_not(kms, example_tree, example_clusters):
    """clusterpy.go decrypts cluster.ConfigItems after updateDefaults, before propagating; pools' own stay."""
    client, key, _ = kms
    tree = with_defaults_lines(secret_tree(example_tree), f"db_password: {encrypted(client, key, cluster_id='*')}\n")
    pool_value = encrypted(client, key, "pool-own", cluster_id=KUBE_2, item="token")
    default, batch = example_clusters[1].node_pools
    pools = [default, dataclasses.replace(batch, config_items={"token": pool_value})]
    kube2 = dataclasses.replace(example_clusters[1], node_pools=pools)
    rendered = Renderer(tree, RenderInputs(KmsDecrypter(lambda: client, [key]))).render(kube2)
    assert rendered.cluster.config_items["db_password"] == SECRET
    assert rendered.cluster.node_pool("batch").config_items["token"] == pool_value


def test_a_key_the_deployment_does_not_name_is_refused(kms, example_tree, example_clusters):
    client, key, other = kms
    cluster = with_secret(example_clusters[0], encrypted(client, other))
    with pytest.raises(RenderError) as info:
        Renderer(secret_tree(example_tree), RenderInputs(KmsDecrypter(lambda: client, [key]))).render(cluster)
    message = str(info.value)
    assert cluster.id in message and "config item db_password" in message
    assert f"its key {other} is not one this deployment names ({key})" in message
    assert "s3cret" not in message


@pytest.mark.parametrize(
    ("keys", "value", "reason"),
    [
        ([], "aws:kms:AAAA", "this deployment names no KMS keys for config items (CDK context clm:decryptKeyArns)"),
        (None, "aws:kms:not base64!", "the text after the prefix is not base64"),
        (None, "aws:kms:" + base64.b64encode(b"x" * 80).decode(), "KMS refused ("),  # moto: AccessDenied
    ],
)
def test_what_cannot_be_decrypted_is_named(kms, example_tree, example_clusters, keys, value, reason):
    client = kms[0]
    cluster = with_secret(example_clusters[0], value)
    with pytest.raises(RenderError, match="config item db_password: cannot decrypt") as info:
        Renderer(example_tree, RenderInputs(KmsDecrypter(lambda: client, keys))).render(cluster)
    assert reason in str(info.value) and info.value.cluster_id == cluster.id


def test_without_a_decrypter_an_encrypted_item_fails(example_tree, example_clusters):
    """No silent ciphertext in a template: CLM's decrypter always has the KMS prefix registered."""
    with pytest.raises(RenderError, match="config item db_password is encrypted"):
        Renderer(example_tree).render(with_secret(example_clusters[0], "aws:kms:AAAA"))
    plain = with_secret(example_clusters[0], "aws:other:kept")  # other prefixes are plain text, as in CLM
    assert Renderer(example_tree).render(plain).cluster.config_items["db_password"] == "aws:other:kept"


def test_a_template_error_never_shows_the_plaintext(kms, example_tree, example_clusters):
    client, key, _ = kms
    cluster = with_secret(example_clusters[0], encrypted(client, key))
    raw = "data: {password: {{ cluster.config_items.db_password }}}"  # YAML syntax spliced raw: the check's error
    failing = "x: {{ {}[cluster.config_items.db_password] }}"  # Jinja's error quotes the missing key
    for line, shown in ((raw, "(its value is not shown)"), (failing, "<decrypted config item>")):
        with pytest.raises(RenderError) as info:
            Renderer(secret_tree(example_tree, line), RenderInputs(KmsDecrypter(lambda: client, [key]))).render(cluster)
        assert "s3cret" not in str(info.value) and shown in str(info.value), str(info.value)


def test_keys_from_env():
    assert keys_from_env({"CLM_DECRYPT_KEY_ARNS": "arn:1,arn:2"}) == ("arn:1", "arn:2")
    assert keys_from_env({}) == ()


def renderer(client, key: str, tree) -> Renderer:
    return Renderer(tree, RenderInputs(KmsDecrypter(lambda: client, [key])))


@pytest.mark.parametrize(
    ("made_for", "bound_to"),
    [
        ("another cluster", (KUBE_2, ITEM)),
        ("another item", (KUBE_1, "admin_token")),
        ("config-defaults.yaml", ("*", ITEM)),
        ("no item: without encryption context, as Zalando's CLM", (None, ITEM)),
    ],
)
def test_a_ciphertext_decrypts_only_in_the_item_it_was_made_for(
    kms, example_tree, example_clusters, made_for, bound_to
):
    """The attack: a registry writer pastes one cluster's (or item's) ciphertext into another's item, so that the
    render decrypts it into a cluster they can read. Refused: naming the cluster, the item and the context needed."""
    client, key, _ = kms
    pasted = encrypted(client, key, LONG_SECRET, *bound_to)
    kube1 = with_secret(example_clusters[0], pasted)
    with pytest.raises(RenderError) as info:
        renderer(client, key, secret_tree(example_tree)).render(kube1)
    message = str(info.value)
    assert info.value.cluster_id == KUBE_1 and f"cluster {KUBE_1}" in message, message
    assert f"config item {ITEM}: cannot decrypt its aws:kms: value: KMS refused (InvalidCiphertextException" in message
    assert (
        f"it is not bound to this item (encryption context clm:cluster-id={KUBE_1}, clm:config-item={ITEM})" in message
    )
    assert f"`clm encrypt {KUBE_1} {ITEM}`" in message and "`clm registry reencrypt`" in message
    assert_no_fragment(message, LONG_SECRET)
    if bound_to[0] == KUBE_2:  # where it was made for, it decrypts
        kube2 = with_secret(example_clusters[1], pasted)
        rendered = renderer(client, key, secret_tree(example_tree)).render(kube2)
        assert rendered.cluster.config_items[ITEM] == LONG_SECRET


def test_a_config_defaults_ciphertext_decrypts_for_every_cluster_and_only_there(kms, example_tree, example_clusters):
    client, key, _ = kms
    shared = with_defaults_lines(secret_tree(example_tree), f"{ITEM}: {encrypted(client, key, cluster_id='*')}\n")
    for cluster in example_clusters:
        assert renderer(client, key, shared).render(cluster).cluster.config_items[ITEM] == SECRET
    kube1s = with_defaults_lines(secret_tree(example_tree), f"{ITEM}: {encrypted(client, key)}\n")
    with pytest.raises(RenderError) as info:  # kube-1's registry ciphertext copied into config-defaults.yaml
        renderer(client, key, kube1s).render(example_clusters[1])
    assert f"(encryption context clm:cluster-id=*, clm:config-item={ITEM})" in str(info.value)
    assert f"`clm encrypt --defaults {ITEM}`" in str(info.value)


def test_a_long_decrypted_value_spliced_raw_is_named_and_none_of_it_shown(kms, example_tree, example_clusters):
    """The attack: a template splices a long decrypted item raw where it is YAML syntax; the splice check's error
    showed its first 77 characters. Now it names the item and shows no part of the value."""
    client, key, _ = kms
    cluster = with_secret(example_clusters[0], encrypted(client, key, LONG_SECRET))
    tree = secret_tree(example_tree, "data: {password: {{ cluster.config_items.db_password }}}")
    with pytest.raises(RenderError) as info:
        renderer(client, key, tree).render(cluster)
    message = info.value.message
    assert message.startswith(
        f"config item {ITEM} (from the registry, decrypted) (its value is not shown) is not data where the template "
        "splices it raw ("
    ), message
    assert (info.value.file, info.value.line, info.value.cluster_id) == (CONFIGMAP, 4, KUBE_1)
    assert_no_fragment(str(info.value), LONG_SECRET)


@pytest.mark.parametrize(
    "expression",
    [
        "cluster.config_items.db_password[:60]",  # a prefix
        "cluster.config_items.db_password[20:70]",  # a middle part
        "cluster.config_items.db_password[-30:]",  # the end, with quotes and '#'
        "cluster.config_items.db_password | tojson",  # JSON-escaped, then quoted by Python
        "('x' ~ cluster.config_items.db_password) | base64",  # base64, at another offset than the value's own
        "cluster.config_items.db_password | wordwrap(20)",  # wrapped over lines
    ],
)
def test_an_error_showing_part_of_a_decrypted_value_shows_none_of_it(kms, example_tree, example_clusters, expression):
    """Where the value's origin is lost (Jinja's own error quotes the key it misses), the message is scrubbed of
    every fragment of MIN_FRAGMENT characters or more, in any of the forms an error shows text in."""
    client, key, _ = kms
    cluster = with_secret(example_clusters[0], encrypted(client, key, LONG_SECRET))
    tree = secret_tree(example_tree, f"x: {{{{ {{}}[{expression}] }}}}")
    with pytest.raises(RenderError) as info:
        renderer(client, key, tree).render(cluster)
    message = str(info.value)
    assert PLACEHOLDER in message and (info.value.file, info.value.line) == (CONFIGMAP, 4), message
    assert_no_fragment(message, LONG_SECRET)
    assert_no_fragment(message.replace("\\n", ""), LONG_SECRET.replace(" ", ""))
    assert base64.b64encode(("x" + LONG_SECRET).encode()).decode()[8:-8] not in message


def test_warnings_never_show_a_decrypted_value(kms, example_tree, example_clusters):
    client, key, _ = kms
    cluster = with_secret(example_clusters[0], encrypted(client, key, LONG_SECRET))
    twice = (
        "data:\n  {{ cluster.config_items.db_password | yaml }}: a\n  {{ cluster.config_items.db_password | yaml }}: b"
    )
    rendered = renderer(client, key, secret_tree(example_tree, twice)).render(cluster)
    [warning] = [w for w in rendered.warnings if "duplicate key" in w]
    assert warning.startswith(f'{CONFIGMAP}:6: duplicate key "{PLACEHOLDER}"'), warning
    assert_no_fragment(warning, LONG_SECRET)


def test_scrubber_finds_a_value_however_a_message_shows_it():
    scrub = Scrubber([LONG_SECRET])
    shown = {
        "as is": LONG_SECRET,
        "truncated": LONG_SECRET[:77] + "...",
        "Python repr": repr(LONG_SECRET),
        "JSON": json.dumps(LONG_SECRET),
        "Go %q": json.dumps(LONG_SECRET),
        "YAML, folded": yaml.safe_dump(LONG_SECRET, default_style='"', width=30),
        "wrapped": "\n    ".join(LONG_SECRET[i : i + 25] for i in range(0, len(LONG_SECRET), 25)),
        "base64 at offset 1": base64.b64encode(b"a" + LONG_SECRET.encode()).decode(),
        "base64 at offset 2": base64.b64encode(b"ab" + LONG_SECRET.encode()).decode(),
        "URL-encoded": urllib.parse.quote(LONG_SECRET),
    }
    for how, text in shown.items():
        message = f"file x.yaml line 3: value {text} refused"
        scrubbed = scrub(message)
        assert scrubbed.startswith("file x.yaml line 3: value ") and scrubbed.endswith(" refused"), (how, scrubbed)
        assert PLACEHOLDER in scrubbed and LONG_SECRET[30:36] not in scrubbed, (how, scrubbed)
    assert scrub("nothing of it here: cluster kube-1, file a.yaml, line 12") == (
        "nothing of it here: cluster kube-1, file a.yaml, line 12"
    )
    assert Scrubber(["a\nb"])("bad 'a\\nb' and a\nb") == f"bad '{PLACEHOLDER}' and {PLACEHOLDER}"  # short: whole
    assert Scrubber([])("any text") == "any text" and not Scrubber([])


def secret_objects(example_tree) -> ConfigTree:
    """A ConfigMap holding the item in a label and under a key, and a Secret holding it in base64 twice over (a
    registry credential in .dockerconfigjson)."""
    configmap = """apiVersion: v1
kind: ConfigMap
metadata:
  name: secret-test
  namespace: default
  labels: {app: secret-test, checksum: {{ cluster.config_items.db_password | yaml }}}
data:
  plain: kept
  {{ cluster.config_items.db_password | yaml }}: as a key
---
apiVersion: v1
kind: Secret
metadata: {name: registry, namespace: default}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: {{ ({"auths": {"r.example.org": {"auth": ("u:" ~ cluster.config_items.db_password) | base64}}}
                         | tojson) | base64 }}
"""
    return tree_with(example_tree, **{"cluster__manifests__secret-test__configmap_dot_yaml": configmap})


def test_objects_record_where_they_hold_decrypted_items_and_the_stored_rendering_keeps_it(
    kms, example_tree, example_clusters
):
    """The apply step cannot decrypt: the render records which nodes hold decrypted items (paths, never values)."""
    client, key, _ = kms
    cluster = with_secret(example_clusters[0], encrypted(client, key, LONG_SECRET))
    rendered = renderer(client, key, secret_objects(example_tree)).render(cluster)
    sealed = {m.name: m.sealed for c in rendered.components for m in c.manifests if c.name == "secret-test"}
    assert sealed == {"secret-test": ("/metadata/labels/checksum", "/data"), "registry": ("/data/.dockerconfigjson",)}
    assert all(not m.sealed for c in rendered.components for m in c.manifests if c.name != "secret-test")
    loaded = stored.loads(stored.dumps(rendered))
    assert {m.name: m.sealed for c in loaded.components for m in c.manifests if c.name == "secret-test"} == sealed
    plain = renderer(client, key, secret_objects(example_tree)).render(with_secret(example_clusters[0], "plain"))
    assert not any(m.sealed for c in plain.components for m in c.manifests)


def test_an_api_server_error_echoing_a_decrypted_value_shows_none_of_it(kms, example_tree, example_clusters):
    """The attack: a template puts a decrypted item where the API server validates it (a label); the server's 422
    echoes the value (Go-quoted, as v1.20's field errors do) and the apply copied it into the problem. Now the apply
    step, reading the stored rendering, scrubs the object's sealed nodes from the error; it names file and object."""
    client, key, _ = kms
    cluster = with_secret(example_clusters[0], encrypted(client, key, LONG_SECRET))
    rendered = stored.loads(stored.dumps(renderer(client, key, secret_objects(example_tree)).render(cluster)))
    [configmap] = [m for c in rendered.components for m in c.manifests if m.name == "secret-test"]
    echoed = (
        'ConfigMap "secret-test" is invalid: metadata.labels: Invalid value: '
        f"{json.dumps(configmap.body['metadata']['labels']['checksum'])}: a valid label must be an empty string or "
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    )
    transport = RecordedTransport(
        {
            ("GET", "/api/v1"): [
                response(200, {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True}]})
            ],
            ("PATCH", "/api/v1/namespaces/default/configmaps/secret-test"): [
                response(422, status_body(422, "Invalid", echoed))
            ],
        }
    )
    with pytest.raises(ApplyError) as info:
        apply_manifests(KubeClient(transport, KUBE_1), [configmap])
    message = str(info.value)
    assert message.startswith(
        f"cluster {KUBE_1}: {CONFIGMAP} document 1 (line 1): ConfigMap default/secret-test: 422 ConfigMap "
        f'"secret-test" is invalid: metadata.labels: Invalid value: "{PLACEHOLDER}": a valid label must be'
    ), message
    assert_no_fragment(message, LONG_SECRET)
    sent = transport.calls[-1]["body"]["metadata"]["labels"]["checksum"]
    assert sent == LONG_SECRET  # the object itself is applied as rendered
