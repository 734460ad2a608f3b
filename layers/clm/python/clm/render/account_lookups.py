"""The account facts CLM gives templates besides EC2's (provisioner/clusterpy.go Provision):
`values.load_balancer_certificate`, the ACM certificate that best matches the API server's host, and
`values.etcd_kms_key_arn`, the key behind the alias `alias/etcd-cluster`.

CLM asks for both on every provision and fails the cluster if either is missing; here each is asked only when a
template of the configuration names it, and a failed lookup fails only the templates that read it. The run
function's role may make these calls (infra.cluster_permissions.grant_account_lookups).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

ETCD_KEY_ALIAS = "alias/etcd-cluster"
# kube-ingress-aws-controller certs/matching.go: a more specific certificate must stay valid this long to win.
MINIMAL_VALIDITY = timedelta(days=7)
GLOB = "*"


@dataclass(frozen=True)
class Certificate:
    """What the match needs of an ACM certificate (DescribeCertificate)."""

    arn: str
    names: tuple[str, ...]
    not_before: datetime
    not_after: datetime


def prefix_glob(pattern: str, host: str) -> bool:
    """Whether a certificate name matches `host`: equal, or `*.rest` with one label in front of `rest`."""
    if pattern in ("", GLOB):
        return pattern == GLOB or host == ""
    if not pattern.startswith(GLOB):
        return host == pattern
    suffix = pattern[1:]
    trimmed = host[: len(host) - len(suffix)] if host.endswith(suffix) else host  # Go's strings.TrimSuffix
    return "." not in trimmed


def best_matching(certificates: Iterable[Certificate], host: str, now: datetime) -> Certificate:
    """kube-ingress-aws-controller's FindBestMatchingCertificate (the version comparing subject alternative
    names and validity, which CLM used with DescribeCertificate; later versions also verify the chain, which an
    ISSUED ACM certificate passes): the longest matching name wins; between equally long ones, the newest still
    valid for a week. ValueError if none matches."""
    candidate: Certificate | None = None
    longest = -1
    soon = now + MINIMAL_VALIDITY
    for cert in certificates:
        if not cert.not_before <= now <= cert.not_after:  # as x509 verification at `now` (ACM: not ISSUED)
            continue
        for name in cert.names:
            if not prefix_glob(name, host):
                continue
            length = len(name)
            if candidate is None:
                candidate, longest = cert, length
            elif length > longest:
                if cert.not_before < now and cert.not_after > soon:
                    candidate, longest = cert, length
            elif length == longest and _better_of_same_length(cert, candidate, now, soon):
                candidate = cert
            elif length < longest and _downgrade(cert, candidate, now, soon):
                candidate, longest = cert, length
    if candidate is None:
        raise ValueError(f"no ACM certificate matches {host}")
    return candidate


def _better_of_same_length(cert: Certificate, best: Certificate, now: datetime, soon: datetime) -> bool:
    if cert.not_before > best.not_before and cert.not_after >= soon:
        return True  # newer, and not invalid within a week
    if cert.not_before == best.not_before and best.not_after <= cert.not_after:
        return True  # issued together, valid longer
    # older, but the best so far expires within a week and this one lasts longer
    return cert.not_before < best.not_before and best.not_after < soon and cert.not_after > best.not_after


def _downgrade(cert: Certificate, best: Certificate, now: datetime, soon: datetime) -> bool:
    """foo.example.org -> *.example.org when the specific one is not valid (yet or for long enough)."""
    return best.not_after < soon and now < best.not_before and cert.not_before < now and soon < cert.not_after


class AccountLookups:
    """ACM and KMS lookups for the renderer; the factories are called on the first lookup only, answers kept."""

    def __init__(self, acm: Callable[[], Any], kms: Callable[[], Any]):
        self._acm, self._kms = acm, kms
        self._certificates: list[Certificate] | None = None
        self._keys: dict[str, str] = {}

    def certificate_arn(self, host: str, now: datetime) -> str:
        """The ARN of the issued ACM certificate that best matches `host`."""
        if self._certificates is None:
            self._certificates = list(self._issued())
        return best_matching(self._certificates, host, now).arn

    def key_arn(self, alias: str) -> str:
        """The ARN of the KMS key an alias names (DescribeKey)."""
        if alias not in self._keys:
            self._keys[alias] = self._kms().describe_key(KeyId=alias)["KeyMetadata"]["Arn"]
        return self._keys[alias]

    def _issued(self) -> Iterable[Certificate]:
        acm = self._acm()
        for page in acm.get_paginator("list_certificates").paginate(CertificateStatuses=["ISSUED"]):
            for summary in page["CertificateSummaryList"]:
                described = acm.describe_certificate(CertificateArn=summary["CertificateArn"])["Certificate"]
                names = tuple(described.get("SubjectAlternativeNames") or [described.get("DomainName", "")])
                yield Certificate(summary["CertificateArn"], names, described["NotBefore"], described["NotAfter"])


def account_values(account: AccountLookups, api_server_url: str, named: Callable[[str], bool]) -> dict[str, Any]:
    """`load_balancer_certificate` (for the API server's host) and `etcd_kms_key_arn`, each only if `named` says
    a template names it; a failed lookup becomes a value that fails the templates reading it, with the reason."""
    from clm.render.network_values import Unavailable
    from clm.timestamps import utc_now

    host = urlsplit(api_server_url).hostname or ""
    asks: dict[str, Callable[[], str]] = {
        "load_balancer_certificate": lambda: account.certificate_arn(host, utc_now()),
        "etcd_kms_key_arn": lambda: account.key_arn(ETCD_KEY_ALIAS),
    }
    values: dict[str, Any] = {}
    for name, ask in asks.items():
        if named(name):
            try:
                values[name] = ask()
            except Exception as exc:  # ACM/KMS refused, no such alias, no matching certificate
                values[name] = Unavailable(f"cannot look up {name}: {exc}")
    return values
