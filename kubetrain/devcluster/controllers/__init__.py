"""The controllers devcluster runs in process (kube-controller-manager's part it needs)."""
