"""Forgetting what kubectl cached about an earlier cluster at the same address.

kubectl keeps each API server's discovery (its groups, resources and categories) on disk for
six hours, in a directory named after the server's address. `kubetrain dev` listens on a port
the OS picks, so a new cluster can get the port of an earlier one that served other API groups;
kubectl would then answer from the old cluster's discovery — `kubectl get kubetrain` failing
with `the server doesn't have a resource type "tfjobs" in group "kubeflow.org"`, or missing the
kinds this cluster serves. Once a cluster owns the address, that directory is removed.

The directory is the one kubectl computes: `$KUBECACHEDIR` (else `~/.kube/cache`), then
`discovery/`, then the server URL without its scheme, every character outside `[(\\w/.)]`
replaced by `_` (cli-runtime's `getDefaultCacheDir` and `computeDiscoverCacheDir`,
k8s.io/cli-runtime/pkg/genericclioptions/config_flags.go): `127.0.0.1_43993`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

_ILLEGAL = re.compile(r"[^(\w/.)]", re.ASCII)  # overlyCautiousIllegalFileCharacters (Go's \w: ASCII)


def discovery_cache_dir(server: str, env: Mapping[str, str], home: str) -> Path:
    """Where kubectl caches the discovery of `server` (a kubeconfig's cluster.server URL)."""
    parent = env.get("KUBECACHEDIR") or os.path.join(home, ".kube", "cache")
    schemeless = server.replace("https://", "", 1).replace("http://", "", 1)
    return Path(parent, "discovery", _ILLEGAL.sub("_", schemeless))


def forget_discovery(server: str) -> None:
    """Remove kubectl's cached discovery of `server` (nothing when there is none)."""
    shutil.rmtree(discovery_cache_dir(server, os.environ, os.path.expanduser("~")), ignore_errors=True)
