"""Rendering of a cluster's configuration with sandboxed Jinja2: defaults, stacks, manifests, deletions."""
