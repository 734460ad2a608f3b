"""CloudFormation: the cluster stack and node-pool stacks (create, update, wait, recover, delete).

Everything takes boto3 clients as arguments and returns JSON-friendly results (`to_dict()`):
`start`/`check` (deploy.py), `start_delete` (delete.py), `removed_node_pools` (removed.py) and
`node_pool_inventory` (inventory.py); stacks to deploy come from `cluster_stack_spec`/`node_pool_stack_spec`.
"""
