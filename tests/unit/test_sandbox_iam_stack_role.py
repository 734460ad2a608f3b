"""What CloudFormation does with a stack's service role is judged against that role (clm_sandbox.iam.stack_role):
a resource whose handler the role does not allow fails, naming the permission, and the stack rolls back."""

from __future__ import annotations

import json
from types import SimpleNamespace

import boto3
import yaml

from clm_sandbox.iam import record
from clm_sandbox.iam.stack_role import resource_arn

ACCOUNT, REGION = "123456789012", "eu-central-1"
TRUST = {
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "cloudformation.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
}
TEMPLATE = {"Resources": {"Node": {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "node", "Path": "/clm/",
    "AssumeRolePolicyDocument": {"Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
    "Action": "sts:AssumeRole"}]}}}}}  # fmt: skip


def stack_role(aws: boto3.Session, roles_resource: str | list[str]) -> str:
    iam = aws.client("iam")
    arn = iam.create_role(RoleName="cfn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    statement = {"Effect": "Allow", "Action": ["iam:*"], "Resource": roles_resource}
    iam.put_role_policy(
        RoleName="cfn", PolicyName="p", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    )
    return arn


def create(aws: boto3.Session, role: str) -> dict:
    cfn = aws.client("cloudformation")
    cfn.create_stack(StackName="kube-1", TemplateBody=yaml.safe_dump(TEMPLATE), RoleARN=role)
    return cfn.describe_stacks(StackName="kube-1")["Stacks"][0]


def test_a_role_allowed_on_the_resource_creates_it_and_the_calls_are_recorded(sandbox_aws: boto3.Session) -> None:
    record.clear()
    stack = create(sandbox_aws, stack_role(sandbox_aws, f"arn:aws:iam::{ACCOUNT}:role/clm/*"))
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    judged = {(j.session, j.action, j.resource, j.outcome) for j in record.judged()}
    assert ("AWSCloudFormation", "iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/clm/node", "allowed") in judged


def test_a_role_scoped_elsewhere_fails_the_resource_naming_the_permission(sandbox_aws: boto3.Session) -> None:
    record.clear()
    stack = create(sandbox_aws, stack_role(sandbox_aws, f"arn:aws:iam::{ACCOUNT}:role/other/*"))
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    events = sandbox_aws.client("cloudformation").describe_stack_events(StackName="kube-1")["StackEvents"]
    [failed] = [e for e in events if e["ResourceStatus"] == "CREATE_FAILED"]
    assert failed["LogicalResourceId"] == "Node"
    assert (
        f":assumed-role/cfn/AWSCloudFormation is not authorized to perform: iam:CreateRole on resource: "
        f"arn:aws:iam::{ACCOUNT}:role/clm/node because no identity-based policy allows"
        in failed["ResourceStatusReason"]
    )
    assert "(ErrorCode: AccessDenied)" in failed["ResourceStatusReason"]
    assert not sandbox_aws.client("iam").list_roles(PathPrefix="/clm/")["Roles"]


def failure(aws: boto3.Session, template: dict, role: str) -> str:
    """The reason of the one failed resource of a stack created from `template` with `role`."""
    cfn = aws.client("cloudformation")
    cfn.create_stack(StackName="kube-2", TemplateBody=yaml.safe_dump(template), RoleARN=role)
    assert cfn.describe_stacks(StackName="kube-2")["Stacks"][0]["StackStatus"] == "ROLLBACK_COMPLETE"
    events = cfn.describe_stack_events(StackName="kube-2")["StackEvents"]
    [failed] = [e for e in events if e["ResourceStatus"] == "CREATE_FAILED"]
    return failed["ResourceStatusReason"]


def test_a_policy_resource_is_judged_on_each_role_it_names(sandbox_aws: boto3.Session) -> None:
    role = stack_role(sandbox_aws, f"arn:aws:iam::{ACCOUNT}:role/clm/*")
    document = {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    template = {"Resources": {"Admin": {"Type": "AWS::IAM::Policy", "Properties": {
        "PolicyName": "admin", "PolicyDocument": document, "Roles": ["cfn"]}}}}  # fmt: skip
    reason = failure(sandbox_aws, template, role)
    assert f"on resource: arn:aws:iam::{ACCOUNT}:role/cfn because" in reason  # GetRolePolicy comes first
    assert sandbox_aws.client("iam").list_role_policies(RoleName="cfn")["PolicyNames"] == ["p"]


def test_an_instance_profile_passes_its_roles(sandbox_aws: boto3.Session) -> None:
    iam = sandbox_aws.client("iam")
    iam.create_role(RoleName="foreign", AssumeRolePolicyDocument=json.dumps(TRUST))
    role = stack_role(sandbox_aws, [f"arn:aws:iam::{ACCOUNT}:role/*", f"arn:aws:iam::{ACCOUNT}:instance-profile/*"])
    template = {"Resources": {"Profile": {"Type": "AWS::IAM::InstanceProfile", "Properties": {"Roles": ["foreign"]}}}}
    pass_only_clm = {"Effect": "Deny", "Action": "iam:PassRole", "NotResource": f"arn:aws:iam::{ACCOUNT}:role/clm/*"}
    iam.put_role_policy(
        RoleName="cfn",
        PolicyName="d",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [pass_only_clm]}),
    )
    reason = failure(sandbox_aws, template, role)
    assert f"iam:PassRole on resource: arn:aws:iam::{ACCOUNT}:role/foreign because" in reason
    judged = [j for j in record.judged() if j.action == "iam:PassRole"]
    assert [(j.resource, j.outcome) for j in judged] == [(f"arn:aws:iam::{ACCOUNT}:role/foreign", "denied")]


def test_a_type_moto_does_not_model_is_still_judged_on_its_resource(sandbox_aws: boto3.Session) -> None:
    """moto skips an S3 bucket policy (it has no model of it); AWS calls its handler with the role all the same."""
    policy = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "*"}]}
    template = {"Resources": {"Open": {"Type": "AWS::S3::BucketPolicy",
                                       "Properties": {"Bucket": "clms-config", "PolicyDocument": policy}}}}  # fmt: skip
    reason = failure(sandbox_aws, template, stack_role(sandbox_aws, "*"))  # iam:* only
    assert "is not authorized to perform: s3:GetBucketPolicy on resource: arn:aws:s3:::clms-config" in reason


def test_resource_arns_as_the_types_create_call_names_them() -> None:
    stack = SimpleNamespace(region_name=REGION, account_id=ACCOUNT)
    assert resource_arn(stack, "AWS::EC2::VPC", {}, "") == f"arn:aws:ec2:{REGION}:{ACCOUNT}:vpc/*"
    assert resource_arn(stack, "AWS::EC2::Subnet", {}, "subnet-1") == f"arn:aws:ec2:{REGION}:{ACCOUNT}:subnet/subnet-1"
    assert resource_arn(stack, "AWS::AutoScaling::AutoScalingGroup", {"AutoScalingGroupName": "g"}, "") == (
        f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:*:autoScalingGroupName/g"
    )
    assert resource_arn(stack, "AWS::IAM::InstanceProfile", {}, "ip") == f"arn:aws:iam::{ACCOUNT}:instance-profile/ip"
    assert resource_arn(stack, "AWS::IAM::InstanceProfile", {"Path": "/clm/"}, "") == (
        f"arn:aws:iam::{ACCOUNT}:instance-profile/clm/*"
    )
    assert resource_arn(stack, "AWS::IAM::Role", {"Path": "/clm/"}, "") == f"arn:aws:iam::{ACCOUNT}:role/clm/*"
    # ARNs whose resource is a name alone (no type before it): judged too, not left "acts on another resource"
    assert resource_arn(stack, "AWS::S3::Bucket", {"BucketName": "b"}, "") == "arn:aws:s3:::b"
    assert resource_arn(stack, "AWS::SQS::Queue", {"QueueName": "q"}, "") == f"arn:aws:sqs:{REGION}:{ACCOUNT}:q"
    assert resource_arn(stack, "AWS::S3::BucketPolicy", {"Bucket": "b", "PolicyDocument": {}}, "") == "arn:aws:s3:::b"


def load_balancer_stack(aws: boto3.Session) -> None:
    """A stack as kube-ingress-aws-controller creates one (a load balancer, its target group and listener), made
    without a service role: CloudFormation acts with its creator's rights."""
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{i}.0/24", AvailabilityZone=f"{REGION}{az}")["Subnet"]["SubnetId"]
        for i, az in enumerate("ab")
    ]
    template = {"Resources": {
        "LB": {"Type": "AWS::ElasticLoadBalancingV2::LoadBalancer", "Properties": {"Subnets": subnets}},
        "TG": {"Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
               "Properties": {"Port": 9999, "Protocol": "HTTP", "VpcId": vpc}},
        "HTTPListener": {"Type": "AWS::ElasticLoadBalancingV2::Listener", "Properties": {
            "LoadBalancerArn": {"Ref": "LB"}, "Port": 80, "Protocol": "HTTP",
            "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": "TG"}}]}},
    }}  # fmt: skip
    aws.client("cloudformation").create_stack(StackName="kube-ing-1", TemplateBody=yaml.safe_dump(template))


def test_delete_stack_acts_with_the_role_it_passes_and_fails_the_stack_on_a_refusal(sandbox_aws: boto3.Session) -> None:
    load_balancer_stack(sandbox_aws)
    cfn, elbv2 = sandbox_aws.client("cloudformation"), sandbox_aws.client("elbv2")
    role = stack_role(sandbox_aws, "*")  # iam:* only
    record.clear()
    cfn.delete_stack(StackName="kube-ing-1", RoleARN=role)
    [stack] = cfn.describe_stacks(StackName="kube-ing-1")["Stacks"]
    assert (stack["StackStatus"], stack["RoleARN"]) == ("DELETE_FAILED", role)
    events = cfn.describe_stack_events(StackName="kube-ing-1")["StackEvents"]
    failed = {e["LogicalResourceId"]: e.get("ResourceStatusReason") for e in events if "FAILED" in e["ResourceStatus"]}
    assert sorted(failed) == ["HTTPListener", "LB", "TG", "kube-ing-1"]  # the resources, and the stack itself
    refused = "AWSCloudFormation is not authorized to perform: elasticloadbalancing:DeleteListener"
    assert refused in failed["HTTPListener"]
    assert stack["StackStatusReason"] == failed["kube-ing-1"]
    # dependents first: the listener refers to both
    assert stack["StackStatusReason"] == "The following resource(s) failed to delete: [HTTPListener, TG, LB]."
    assert len(elbv2.describe_load_balancers()["LoadBalancers"]) == 1

    elb = {"Effect": "Allow", "Action": ["elasticloadbalancing:*"], "Resource": "*"}
    sandbox_aws.client("iam").put_role_policy(
        RoleName="cfn", PolicyName="elb", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [elb]})
    )
    cfn.delete_stack(StackName="kube-ing-1")  # again, with the role the stack now has
    assert cfn.describe_stacks(StackName=stack["StackId"])["Stacks"][0]["StackStatus"] == "DELETE_COMPLETE"
    assert elbv2.describe_load_balancers()["LoadBalancers"] == []
    assert elbv2.describe_target_groups()["TargetGroups"] == []
    judged = {(j.action, j.outcome) for j in record.judged() if j.session == "AWSCloudFormation"}
    assert ("elasticloadbalancing:DeleteLoadBalancer", "allowed") in judged
