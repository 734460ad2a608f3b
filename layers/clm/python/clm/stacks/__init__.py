"""CloudFormation: the cluster stack and node-pool stacks (create, update, wait, recover, delete)."""
