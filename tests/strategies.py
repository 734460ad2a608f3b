"""Hypothesis strategies for valid registry data."""

from __future__ import annotations

from hypothesis import strategies as st

from clm.model import DISCOUNT_STRATEGIES, LIFECYCLE_STATUSES, Cluster, ClusterStatus, NodePool, Problem

LOWER = "abcdefghijklmnopqrstuvwxyz"
# Built from plain alphabets rather than regexes: cheap enough for Hypothesis' generation health check.
slug = st.builds(
    lambda first, middle, last: first + middle + last,
    st.sampled_from(LOWER),
    st.text(LOWER + "0123456789-", max_size=10),
    st.sampled_from(LOWER + "0123456789"),
)
# A fixed alphabet (ASCII, YAML's special characters, some non-ASCII): st.characters() with categories builds a
# Unicode table on first use, seconds on a fresh machine, which trips Hypothesis' generation health check.
text = st.text(st.sampled_from([chr(c) for c in range(32, 127)] + list("äéßøλЖ中文😀\u00a0")), max_size=20)
config_items = st.dictionaries(st.text(LOWER + "_", min_size=1, max_size=12), text, max_size=4)


@st.composite
def node_pools(draw: st.DrawFn) -> list[NodePool]:
    names = draw(st.lists(slug, max_size=3, unique=True))
    pools = []
    for name in names:
        low = draw(st.integers(0, 20))
        legacy = draw(st.booleans())
        types = (
            [draw(st.sampled_from(["m5.large", "c5.xlarge", "r5.2xlarge"]))]
            if legacy
            else draw(
                st.lists(
                    st.sampled_from(["m5.large", "c5.xlarge", "r5.2xlarge", "m6i.large"]),
                    min_size=1,
                    max_size=3,
                    unique=True,
                )
            )
        )
        pools.append(
            NodePool(
                name=name,
                profile=draw(slug),
                min_size=low,
                max_size=low + draw(st.integers(0, 20)),
                instance_types=types,
                legacy_instance_type=legacy,
                discount_strategy=draw(st.sampled_from(DISCOUNT_STRATEGIES)),
                config_items=draw(config_items),
            )
        )
    return pools


eks_aliases = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)
problems = st.builds(Problem, title=text, detail=text, status=st.integers(0, 599))
statuses = st.builds(
    ClusterStatus, current_version=text, last_version=text, next_version=text, problems=st.lists(problems, max_size=3)
)


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    account = f"{draw(st.integers(0, 10**12 - 1)):012d}"
    region = draw(st.sampled_from(["eu-central-1", "us-east-1", "ap-southeast-2", "us-gov-west-1"]))
    local_id = draw(slug)
    provider = draw(st.sampled_from(["zalando-aws", "zalando-eks"]))
    # A zalando-eks cluster's alias names its EKS cluster (clm.validation: the Cluster Registry's pattern).
    alias = draw(eks_aliases if provider == "zalando-eks" else text)
    items = draw(config_items)
    if provider == "zalando-eks":
        items.pop("eks_cluster_name", None)
    return Cluster(
        id=f"aws:{account}:{region}:{local_id}",
        local_id=local_id,
        infrastructure_account=f"aws:{account}",
        region=region,
        provider=provider,
        lifecycle_status=draw(st.sampled_from(LIFECYCLE_STATUSES)),
        alias=alias,
        api_server_url=draw(st.sampled_from(["", "https://api.example.org", "https://10.0.0.1:6443/x"])),
        environment=draw(st.sampled_from(["", "test", "production"])),
        criticality_level=draw(st.integers(0, 3)),
        config_items=items,
        node_pools=draw(node_pools()),
        channel=draw(st.none() | st.sampled_from(["stable", "beta"])),
        owner=draw(st.none() | slug),
        account_name=draw(st.none() | slug),
        status=draw(statuses),
    )
