"""The training-progress endpoint (Kubeflow Trainer's status server, for every job kind):
authz.py who may report (pure), coalesce.py rate limits and write coalescing, lookup.py where
jobs and pods are read, gauges.py the Prometheus series, server.py the HTTPS server."""
