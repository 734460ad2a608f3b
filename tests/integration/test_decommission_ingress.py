"""Decommission deletes the stacks kube-ingress-aws-controller made for the cluster's load balancers, as CLM does
(provisioner/clusterpy.go Decommission deletes every stack tagged kubernetes.io/cluster/<id>=owned before the main
stack): after the node-pool stacks, before the cluster stack whose subnets and security group the load balancer
uses. The controller's stack is created as the controller creates it (aws/cf.go, cf_template.go: its tags, its
template, its own IAM role, termination protection on) and deleted with the ClusterStackRole, every resource's
delete handler judged against that role; another team's stack carrying only the cluster's tag stays."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from kubernetes import client as k8s

from clm_sandbox.iam import record
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import Deployment, as_role, provisioned, register_example_cluster, the_run

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

INGRESS_STACK = "kube-ing-4f3a9c"  # the controller names its stacks after a hash of the certificates
TEAM_STACK = "team-data"
# The controller's rights (its IAM role, as Zalando's kubernetes-on-aws gives it): CloudFormation and ELBv2.
CONTROLLER_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["cloudformation:*", "elasticloadbalancing:*"], "Resource": "*"},
        {"Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
    ],
}
TRUST = {"Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def controller_template() -> str:
    """The shape of aws/cf_template.go generateTemplate for an application load balancer without certificates."""
    ref = lambda name: {"Ref": name}  # noqa: E731
    return json.dumps(
        {
            "Description": "Load Balancer for Kubernetes Ingress",
            "Parameters": {
                "LoadBalancerSchemeParameter": {"Type": "String", "Default": "internet-facing"},
                "LoadBalancerSecurityGroupParameter": {"Type": "List<AWS::EC2::SecurityGroup::Id>"},
                "LoadBalancerSubnetsParameter": {"Type": "List<AWS::EC2::Subnet::Id>"},
                "TargetGroupHealthCheckPathParameter": {"Type": "String", "Default": "/kube-system/healthz"},
                "TargetGroupHealthCheckPortParameter": {"Type": "Number", "Default": "9999"},
                "TargetGroupTargetPortParameter": {"Type": "Number", "Default": "9999"},
                "TargetGroupVPCIDParameter": {"Type": "AWS::EC2::VPC::Id"},
                "IpAddressType": {"Type": "String", "Default": "ipv4"},
                "Type": {"Type": "String", "Default": "application"},
            },
            "Resources": {
                "HTTPListener": {
                    "Type": "AWS::ElasticLoadBalancingV2::Listener",
                    "Properties": {
                        "DefaultActions": [{"Type": "forward", "TargetGroupArn": ref("TG")}],
                        "LoadBalancerArn": ref("LB"),
                        "Port": 80,
                        "Protocol": "HTTP",
                    },
                },
                "LB": {
                    "Type": "AWS::ElasticLoadBalancingV2::LoadBalancer",
                    "Properties": {
                        "LoadBalancerAttributes": [
                            {"Key": "idle_timeout.timeout_seconds", "Value": "60"},
                            {"Key": "routing.http2.enabled", "Value": "true"},
                        ],
                        "IpAddressType": ref("IpAddressType"),
                        "Scheme": ref("LoadBalancerSchemeParameter"),
                        "SecurityGroups": ref("LoadBalancerSecurityGroupParameter"),
                        "Subnets": ref("LoadBalancerSubnetsParameter"),
                        "Type": ref("Type"),
                        "Tags": [{"Key": "StackName", "Value": ref("AWS::StackName")}],
                    },
                },
                "TG": {
                    "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
                    "Properties": {
                        "HealthCheckPath": ref("TargetGroupHealthCheckPathParameter"),
                        "HealthCheckPort": ref("TargetGroupHealthCheckPortParameter"),
                        "HealthCheckProtocol": "HTTP",
                        "Port": ref("TargetGroupTargetPortParameter"),
                        "Protocol": "HTTP",
                        "VpcId": ref("TargetGroupVPCIDParameter"),
                    },
                },
            },
            "Outputs": {
                "LoadBalancerDNSName": {"Value": {"Fn::GetAtt": ["LB", "DNSName"]}},
                "TargetGroupARN": {"Value": ref("TG")},
            },
        }
    )


def create_ingress_stack(deployment: Deployment) -> str:
    """The controller's stack for the cluster, created with the controller's own role session; its LB's ARN."""
    admin = deployment.session
    cluster_stack = admin.client("cloudformation").describe_stacks(StackName="kube-1")["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in cluster_stack["Outputs"]}
    vpc = admin.client("ec2").describe_security_groups(GroupIds=[outputs["NodeSecurityGroup"]])["SecurityGroups"][0]
    iam = admin.client("iam")
    role = iam.create_role(RoleName="kube-ingress-aws-controller", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.put_role_policy(
        RoleName="kube-ingress-aws-controller", PolicyName="ingress", PolicyDocument=json.dumps(CONTROLLER_POLICY)
    )
    controller = as_role(role["Role"]["Arn"], "kube-ingress-aws-controller").client("cloudformation")
    parameters = {
        "LoadBalancerSchemeParameter": "internet-facing",
        "LoadBalancerSecurityGroupParameter": outputs["NodeSecurityGroup"],
        "LoadBalancerSubnetsParameter": outputs["Subnets"],
        "TargetGroupVPCIDParameter": vpc["VpcId"],
        "TargetGroupTargetPortParameter": "9999",
        "IpAddressType": "ipv4",
    }
    controller.create_stack(
        StackName=INGRESS_STACK,
        OnFailure="DELETE",
        TemplateBody=controller_template(),
        Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in parameters.items()],
        Tags=[
            {"Key": "kubernetes:application", "Value": "kube-ingress-aws-controller"},
            {"Key": f"kubernetes.io/cluster/{deployment.cluster_id}", "Value": "owned"},
        ],
        TimeoutInMinutes=10,
        EnableTerminationProtection=True,  # the controller's --stack-termination-protection
    )
    stack = controller.describe_stacks(StackName=INGRESS_STACK)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    assert "RoleARN" not in stack  # CloudFormation acted with the controller's rights
    lb = controller.describe_stack_resource(StackName=INGRESS_STACK, LogicalResourceId="LB")["StackResourceDetail"]
    return lb["PhysicalResourceId"]


def create_team_stack(deployment: Deployment) -> None:
    """Another team's stack for the cluster: the cluster's tag, nothing else."""
    deployment.session.client("cloudformation").create_stack(
        StackName=TEAM_STACK,
        TemplateBody=json.dumps({"Resources": {"Data": {"Type": "AWS::SQS::Queue"}}}),
        Tags=[{"Key": f"kubernetes.io/cluster/{deployment.cluster_id}", "Value": "owned"}],
    )


def live_stacks(cfn: Any) -> list[str]:
    return sorted(s["StackName"] for s in cfn.describe_stacks()["Stacks"] if s["StackStatus"] != "DELETE_COMPLETE")


def test_decommission_deletes_the_ingress_controllers_stacks_before_the_cluster_stack_and_leaves_others(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    register_example_cluster(deployment)
    provisioned(deployment, nodes, kube_api)
    load_balancer = create_ingress_stack(deployment)
    create_team_stack(deployment)
    cfn, elbv2 = deployment.session.client("cloudformation"), deployment.session.client("elbv2")
    assert [lb["LoadBalancerArn"] for lb in elbv2.describe_load_balancers()["LoadBalancers"]] == [load_balancer]

    known = len(deployment.executions(deployment.provision))
    cluster = deployment.registry.get(deployment.cluster_id)
    deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    run = the_run(deployment.settle(known))
    assert run["status"] == "SUCCEEDED", run
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommissioned"

    assert live_stacks(cfn) == ["Clm", TEAM_STACK]
    assert elbv2.describe_load_balancers()["LoadBalancers"] == []
    assert elbv2.describe_target_groups()["TargetGroups"] == []
    machines = deployment.sfn.list_state_machines()["stateMachines"]
    [decommission] = [m["stateMachineArn"] for m in machines if m["name"].endswith("-decommission")]
    [child] = deployment.executions(decommission)
    states = deployment.states(child["executionArn"])
    order = ["Pools", "DeleteIngressStacks", "DeleteClusterStack", "CleanUp"]
    assert [s for s in states if s in order] == order
    output = json.loads(deployment.sfn.describe_execution(executionArn=child["executionArn"])["output"])
    assert output["ingress"] == {"deleting": [], "left": [TEAM_STACK], "done": True}
    # The load balancer's parts were deleted by CloudFormation with the ClusterStackRole, each handler allowed.
    judged = {(j.action, j.outcome) for j in record.judged() if j.session == "AWSCloudFormation"}
    for action in ("DeleteListener", "DeleteTargetGroup", "DeleteLoadBalancer"):
        assert (f"elasticloadbalancing:{action}", "allowed") in judged
    stacks_function = {(j.action, j.outcome) for j in record.judged() if "StacksFunction" in j.session}
    assert ("cloudformation:DeleteStack", "allowed") in stacks_function
