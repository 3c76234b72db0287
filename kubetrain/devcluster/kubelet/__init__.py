"""The simulated kubelet (PodSimulator): nodes, pod binding and status transitions."""
