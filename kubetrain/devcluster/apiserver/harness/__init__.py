"""What tests control and observe of the emulated kube-apiserver: fault injection (faults.py)
and request accounting (accounting.py)."""
