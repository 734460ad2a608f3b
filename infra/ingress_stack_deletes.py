"""What the ClusterStackRole needs to delete kube-ingress-aws-controller's load balancer stacks at decommission.

The controller makes one stack per load balancer (aws/cf_template.go: the load balancer, its listeners, listener
certificate and rules, target groups, optional CloudWatch alarms), tagged `kubernetes.io/cluster/<id>=owned` and
`kubernetes:application=kube-ingress-aws-controller`. A decommission deletes them (clm.stacks.ingress) with the
ClusterStackRole, as CLM's own stacks, so the role may call what those types' delete handlers list (CloudFormation's
resource schemas; tests/unit/test_cluster_stack_role.py checks it). CLM never creates nor updates such resources:
nothing else of ELBv2 or CloudWatch is granted. CloudFormation deletes only a stack's own resources, and the stacks
function passes the role only for CLM's stacks and the controller's (infra.cluster_permissions).

Not covered: the controller's optional WAF association (AWS::WAFv2::WebACLAssociation,
AWS::WAFRegional::WebACLAssociation); a fleet that uses it attaches a policy for its delete handler
(context clm:clusterStackPolicyArns).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam

INGRESS_STACK_TYPES = (
    "AWS::ElasticLoadBalancingV2::LoadBalancer",
    "AWS::ElasticLoadBalancingV2::Listener",
    "AWS::ElasticLoadBalancingV2::ListenerCertificate",
    "AWS::ElasticLoadBalancingV2::ListenerRule",
    "AWS::ElasticLoadBalancingV2::TargetGroup",
    "AWS::CloudWatch::Alarm",
)
# The delete handlers read back what they delete; ELBv2's Describe calls support no resource-level permissions.
ELBV2_DESCRIBE = [
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeTargetGroups",
]
DELETES = [
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeleteListener",
    "elasticloadbalancing:DeleteRule",
    "elasticloadbalancing:DeleteTargetGroup",
    "cloudwatch:DeleteAlarms",
    "cloudwatch:DescribeAlarms",
]
# What the deletes act on (service, resource): the load balancers' parts (application and network), the alarms.
RESOURCES = (
    ("elasticloadbalancing", "loadbalancer/*"),
    ("elasticloadbalancing", "listener/*"),
    ("elasticloadbalancing", "listener-rule/*"),
    ("elasticloadbalancing", "targetgroup/*"),
    ("cloudwatch", "alarm:*"),
)
WILDCARDS = "the ingress controller names its load balancers, their parts and alarms"


def ingress_statements(stack: Stack) -> list[iam.PolicyStatement]:
    """The ClusterStackRole's statements for deleting the controller's stacks."""
    return [
        iam.PolicyStatement(sid="IngressStacksDescribe", actions=ELBV2_DESCRIBE, resources=["*"]),
        iam.PolicyStatement(sid="IngressStacksDelete", actions=DELETES, resources=ingress_resources(stack)),
    ]


def ingress_resources(stack: Stack) -> list[str]:
    """The ARN patterns the deletes act on, in this account and region."""
    return [
        stack.format_arn(service=service, resource=resource, arn_format=ArnFormat.NO_RESOURCE_NAME)
        for service, resource in RESOURCES
    ]
