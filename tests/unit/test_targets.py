"""Which accounts a deployment may reach (clm:targetAccounts, include/exclude regexes as CLM's --include/--exclude)
and the role it assumes in each target."""

from __future__ import annotations

from clm.targets import Target, TargetPolicy

HOME = "123456789012"
OTHER = Target("222222222222", "eu-west-1")


def test_without_target_accounts_only_the_home_account_is_reached() -> None:
    policy = TargetPolicy.from_env({}, home=HOME)
    assert policy.refusal(Target(HOME, "eu-central-1")) == ""
    assert policy.refusal(OTHER) == (
        "account 222222222222 is not one this deployment may reach (clm:targetAccounts: 123456789012)"
    )


def test_listed_accounts_and_the_hubs_own_or_an_explicit_star() -> None:
    listed = TargetPolicy.from_env({"CLM_TARGET_ACCOUNTS": "222222222222, 333333333333"}, home=HOME)
    assert listed.refusal(OTHER) == ""
    assert listed.refusal(Target(HOME, "eu-west-1")) == ""  # the hub's own account: its other regions
    assert listed.refusal(Target("444444444444", "eu-west-1")) == (
        "account 444444444444 is not one this deployment may reach (clm:targetAccounts: 123456789012, 222222222222, "
        "333333333333)"
    )
    assert TargetPolicy.from_env({"CLM_TARGET_ACCOUNTS": "*"}, home=HOME).refusal(OTHER) == ""


def test_include_and_exclude_match_the_whole_account_id() -> None:
    environ = {"CLM_TARGET_ACCOUNTS": "*", "CLM_TARGET_INCLUDE": "2+", "CLM_TARGET_EXCLUDE": "22222222222."}
    policy = TargetPolicy.from_env(environ, home=HOME)
    assert policy.refusal(Target("2222", "eu-west-1")) == ""
    assert (
        policy.refusal(Target("322222222222", "eu-west-1"))
        == "account 322222222222 does not match clm:targetInclude 2+"
    )
    assert policy.refusal(OTHER) == "account 222222222222 matches clm:targetExclude 22222222222."


def test_the_role_is_named_per_region_in_the_targets_account() -> None:
    assert TargetPolicy.from_env({}, home=HOME).role_arn(OTHER) == "arn:aws:iam::222222222222:role/clm-target-eu-west-1"
    named = TargetPolicy.from_env({"CLM_TARGET_ROLE": "fleet/clm-{region}"}, home=HOME)
    assert named.role_arn(OTHER, "aws-cn") == "arn:aws-cn:iam::222222222222:role/fleet/clm-eu-west-1"
