"""`clm encrypt` and `clm registry reencrypt`: config items as `aws:kms:` ciphertext bound to their cluster and item.

A ciphertext carries the encryption context of its item (clm.render.secrets.encryption_context), which the render
requires: made for one cluster or item, it does not decrypt for another. Zalando's CLM encrypts without context;
`--reencrypt` and `clm registry reencrypt` bind such ciphertexts with KMS ReEncrypt, so that the plaintext never
leaves KMS (docs/migrating-from-zalando-clm.md). The key is the deployment's (its output `DecryptKeyArns`, from
`clm:decryptKeyArns`) unless `--key` names one.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click
from botocore.exceptions import ClientError

from clm.cli.context import CliContext
from clm.cli.deployment import stack_option, stack_outputs
from clm.cli.errors import CliError
from clm.cli.options import pass_cli
from clm.cli.output import Column, emit, short_id
from clm.render.secrets import KMS_PREFIX, encryption_context, is_encrypted

KEYS_OUTPUT = "DecryptKeyArns"
F = TypeVar("F", bound=Callable[..., Any])


def key_option(function: F) -> F:
    """The `--key` option: the KMS key to encrypt with (default: the deployment's, when it names exactly one)."""
    return click.option(
        "--key",
        help=f"KMS key (ARN, id or alias) to encrypt with (default: the deployment's, its output {KEYS_OUTPUT}).",
    )(function)


@click.command()
@click.argument("names", nargs=-1, required=True, metavar="CLUSTER_ID ITEM")
@click.option("--defaults", is_flag=True, help="An item of config-defaults.yaml, for every cluster: give ITEM alone.")
@click.option(
    "--reencrypt",
    is_flag=True,
    help="Read an `aws:kms:` value made without encryption context (Zalando CLM's) and bind it (KMS ReEncrypt).",
)
@key_option
@stack_option
@pass_cli
def encrypt(
    cli: CliContext, names: tuple[str, ...], defaults: bool, reencrypt: bool, key: str | None, stack: str
) -> None:
    """Print a config item's value, read from standard input (as is: `printf %s VALUE | clm encrypt ...`; at a
    terminal, asked for twice without echo), as `aws:kms:<base64>` bound to CLUSTER_ID and ITEM: it decrypts for
    that item of that cluster only.

    \b
    clm encrypt aws:123456789012:eu-central-1:kube-1 db_password < password.txt
    clm encrypt --defaults monitoring_token < token.txt
    clm encrypt --reencrypt aws:123456789012:eu-central-1:kube-1 db_password <<< "aws:kms:AQICAH..."
    """
    if len(names) != (1 if defaults else 2):
        raise CliError("give CLUSTER_ID and ITEM, or --defaults and ITEM")
    context = encryption_context(None if defaults else names[0], names[-1])
    kms, key = cli.client("kms"), key or deployment_key(cli, stack)
    if reencrypt:
        value = sys.stdin.read().strip()
        if not is_encrypted(value):
            raise CliError(f"--reencrypt reads an {KMS_PREFIX} value on standard input")
        click.echo(bind(kms, key, context, value))
        return
    text = click.prompt("value", hide_input=True, confirmation_prompt=True) if sys.stdin.isatty() else sys.stdin.read()
    blob = kms.encrypt(KeyId=key, Plaintext=text.encode(), EncryptionContext=context)["CiphertextBlob"]
    click.echo(KMS_PREFIX + base64.b64encode(blob).decode())


@click.command()
@click.argument("cluster_ids", nargs=-1, metavar="[CLUSTER_ID...]")
@click.option("--dry-run", is_flag=True, help="Show what would be bound; write nothing.")
@key_option
@stack_option
@pass_cli
def reencrypt(cli: CliContext, cluster_ids: tuple[str, ...], dry_run: bool, key: str | None, stack: str) -> None:
    """Bind the `aws:kms:` config items of the registry's clusters (default: all) that were encrypted without
    encryption context, as Zalando's CLM encrypts, to their cluster and item (KMS ReEncrypt: the plaintext never
    leaves KMS). Items already bound are left; any other is named, left, and makes the command fail.
    """
    store = cli.registry()
    clusters = [store.get(cluster_id) for cluster_id in cluster_ids] or store.list_clusters()
    kms, key = cli.client("kms"), key or deployment_key(cli, stack)
    rows = []
    for cluster in clusters:
        for item, value in sorted(cluster.config_items.items()):
            if not is_encrypted(value):
                continue
            outcome = _bind_item(kms, key, encryption_context(cluster.id, item), value)
            if outcome.startswith(KMS_PREFIX):
                written = dry_run or store.replace_config_item(cluster.id, item, value, outcome)
                outcome = ("would bind" if dry_run else "bound") if written else "changed meanwhile: left, run again"
            rows.append({"cluster": cluster.id, "item": item, "outcome": outcome})
    verb = "would bind" if dry_run else "bound"
    bound = sum(row["outcome"] == verb for row in rows)
    columns = [Column("cluster", short=short_id), "item", Column("outcome", note=True)]
    emit(rows, columns, cli.output, title=f"{verb} {bound} of {len(rows)} encrypted items")
    left = [f"{row['cluster']} {row['item']}" for row in rows if row["outcome"] not in (verb, "already bound")]
    if left:
        raise CliError(f"not bound: {', '.join(left)} (see the table)")


def bind(kms: Any, key: str, context: Mapping[str, str], value: str) -> str:
    """`value` (`aws:kms:`, made without encryption context) re-encrypted with `key` and bound to `context`."""
    return KMS_PREFIX + base64.b64encode(_rewrap(kms, _blob(value), key, {}, context)).decode()


def _bind_item(kms: Any, key: str, context: Mapping[str, str], value: str) -> str:
    """The item's value bound to `context`, or why not: "already bound", or "refused (...)"."""
    try:
        return bind(kms, key, context, value)
    except CliError as exc:
        return f"refused: {exc}"
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
    if code != "InvalidCiphertextException":
        return f"refused ({code})"
    try:  # made with a context: this item's? ReEncrypt from it tells, the plaintext staying in KMS
        _rewrap(kms, _blob(value), key, context, context)
    except ClientError:
        return f"refused ({code}): made for another cluster or item"
    return "already bound"


def _blob(value: str) -> bytes:
    try:
        return base64.b64decode(value[len(KMS_PREFIX) :], validate=True)
    except ValueError:
        raise CliError(f"the text after {KMS_PREFIX} is not base64") from None


def _rewrap(kms: Any, blob: bytes, key: str, source: Mapping[str, str], context: Mapping[str, str]) -> bytes:
    """KMS ReEncrypt of `blob` from encryption context `source` to `key` and `context`."""
    bound = {"SourceEncryptionContext": dict(source)} if source else {}
    response = kms.re_encrypt(
        CiphertextBlob=blob, DestinationKeyId=key, DestinationEncryptionContext=dict(context), **bound
    )
    return response["CiphertextBlob"]


def deployment_key(cli: CliContext, stack: str) -> str:
    """The deployment's key for config items (its output DecryptKeyArns); CliError unless it names exactly one."""
    keys = [arn for arn in stack_outputs(cli.client("cloudformation"), stack).get(KEYS_OUTPUT, "").split(",") if arn]
    if len(keys) != 1:
        named = f"names {len(keys)} ({', '.join(keys)})" if keys else "names none (CDK context clm:decryptKeyArns)"
        raise CliError(f"the deployment {stack} {named}: pass --key")
    return keys[0]
