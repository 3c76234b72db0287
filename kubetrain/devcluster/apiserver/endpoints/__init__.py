"""The HTTP layer of the emulated kube-apiserver: DevCluster on loopback (server.py), the REST
paths (handlers.py), what a request asks for (requestparse.py), discovery (discovery.py)
and the OpenAPI v3 surface (openapi.py)."""
