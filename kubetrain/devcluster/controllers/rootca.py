"""The root CA publisher of kube-controller-manager (root-ca-cert-publisher): every namespace
that is not terminating has a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the CA bundle that
verifies the API server's serving certificate — pods mount it (projected service account
volumes) to reach `kubernetes.default.svc`. It is created when the namespace appears (or when
the CA is first known, for namespaces that already exist), re-created when it is deleted, and
its data and description annotation are put back when someone changes them, as the upstream
controller does. A devcluster without TLS has no CA, so it publishes none.
"""

from __future__ import annotations

import copy

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.kinds.resources import NAMESPACES_KEY
from kubetrain.devcluster.apiserver.storage.store import Event
from kubetrain.devcluster.apiserver.verbs.core import ApiServer

ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
CONFIG_MAPS_KEY = "configmaps"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


def namespace_needing_root_ca(ev: Event) -> str | None:
    """The namespace whose `kube-root-ca.crt` this event may have to (re-)create or restore."""
    md = ev.obj["metadata"]
    if ev.rkey == NAMESPACES_KEY and ev.type == "ADDED" and not md.get("deletionTimestamp"):
        return str(md["name"])
    if ev.rkey == CONFIG_MAPS_KEY and md.get("name") == ROOT_CA_CONFIG_MAP:
        return str(md.get("namespace", ""))
    return None


def ensure_root_ca(api: ApiServer, namespace: str, ca_pem: str) -> None:
    """Create, or restore, the namespace's `kube-root-ca.crt` (nothing in a terminating one)."""
    ns = api.store.get(NAMESPACES_KEY, "", namespace)
    if ns is None or ns["metadata"].get("deletionTimestamp"):
        return
    rt = api.registry.by_key(CONFIG_MAPS_KEY)
    assert rt is not None
    data = {"ca.crt": ca_pem}
    current = api.store.get(CONFIG_MAPS_KEY, namespace, ROOT_CA_CONFIG_MAP)
    if current is None:
        cm: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA_CONFIG_MAP,
                "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
            },
            "data": data,
        }
        meta.prepare_create(cm, rt, namespace, api.clock())
        api.store.create(CONFIG_MAPS_KEY, cm)
        return
    annotations = current["metadata"].get("annotations") or {}
    if current.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
        return
    if current["metadata"].get("deletionTimestamp"):
        return
    restored = copy.deepcopy(current)
    restored["data"] = data
    restored["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
    try:
        api.commit(rt, restored, current["metadata"]["resourceVersion"])
    except errors.ApiError as exc:
        if exc.code not in (404, 409):  # changed or gone meanwhile: its own event brings it back
            raise
