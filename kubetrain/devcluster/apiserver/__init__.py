"""The emulated kube-apiserver, in layers; each sub-package imports only the ones listed after it:
endpoints/ (HTTP: DevCluster, REST paths, discovery), auth/ (authentication, authorization,
impersonation), harness/ (fault injection, request accounting) and verbs/ (the write path,
reads, watches, subresources, conversion), request/ (targets, body decoding, patches,
selectors), kinds/ (the resource registry, built-in kinds' and CRDs' rules) and storage/ (the
store, its history and sweeps), base/ (shared types, errors, background tasks)."""
