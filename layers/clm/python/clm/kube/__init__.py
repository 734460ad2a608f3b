"""Kubernetes: client and auth, server-side apply, deletions and the drain engine."""
