"""The training-progress endpoint (Kubeflow Trainer's status server, for every job kind):
authz.py who may report (pure), coalesce.py rate limits and write coalescing, lookup.py where
jobs and pods are read, watch.py the informers of a stand-alone endpoint (`kubetrain
status-server`), server.py the HTTPS server. The progress gauges are the controller's
(kubetrain.operator.progressgauges)."""
