"""What every layer of the emulated kube-apiserver shares: value types (types.py), metav1.Status
errors (errors.py) and the start and stop of a background task (background.py)."""
