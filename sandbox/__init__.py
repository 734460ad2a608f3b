"""The local sandbox: moto for AWS, a real Kubernetes control plane and a node simulator. Never deployed."""
