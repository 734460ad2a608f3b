"""The cluster registry: CLM's clusters.yaml format and the DynamoDB table."""
