"""The HTTP serving infrastructure every kubetrain server shares: the connection guard
(guard.py: header and idle deadlines, a connection cap), every Prometheus metric defined once
(metrics.py), the /metrics /healthz /readyz server (health.py), who may read /metrics
(auth.py: TokenReview + SubjectAccessReview decisions, their caches) and the worker processes'
metrics added to the parent's (merge.py). It imports no other kubetrain package: the API calls
of auth.py are made by `kubetrain.kube.access`, the serving certificate comes from
`kubetrain.certs.tls`, both handed in by the caller."""
