"""The admission webhook chain devcluster runs on writes, as kube-apiserver runs it."""
