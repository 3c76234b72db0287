"""Kubeflow Trainer v2's TrainJob as kubetrain runs it, without JobSet: the runtime a TrainJob
refers to, patched and overridden (`resolve`), checked (`validate`). Pure."""
