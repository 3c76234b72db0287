"""The emulated kube-apiserver: HTTPS server and REST paths (server.py, handlers.py), the write
path (core.py), reads and watches, the store, CRDs and discovery, RBAC, fault injection and
request accounting."""
