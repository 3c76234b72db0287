"""The ServiceAccount controller of kube-controller-manager (serviceaccounts-controller): every
namespace that is not terminating has a ServiceAccount named `default`, created when the
namespace appears and re-created when it is deleted — pods run as it unless they name another,
and the kubelet asks for their tokens (TokenRequest) in its name.
"""

from __future__ import annotations

from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.kinds.resources import NAMESPACES_KEY
from kubetrain.devcluster.apiserver.storage.store import Event
from kubetrain.devcluster.apiserver.verbs.core import ApiServer

DEFAULT_ACCOUNT = "default"
SERVICE_ACCOUNTS_KEY = "serviceaccounts"


def namespace_needing_account(ev: Event) -> str | None:
    """The namespace whose default ServiceAccount this event may have to (re-)create."""
    md = ev.obj["metadata"]
    if ev.rkey == NAMESPACES_KEY and ev.type == "ADDED" and not md.get("deletionTimestamp"):
        return str(md["name"])
    if ev.rkey == SERVICE_ACCOUNTS_KEY and ev.type == "DELETED" and md.get("name") == DEFAULT_ACCOUNT:
        return str(md.get("namespace", ""))
    return None


def ensure_default_account(api: ApiServer, namespace: str) -> None:
    ns = api.store.get(NAMESPACES_KEY, "", namespace)
    if ns is None or ns["metadata"].get("deletionTimestamp"):
        return
    if api.store.get(SERVICE_ACCOUNTS_KEY, namespace, DEFAULT_ACCOUNT) is not None:
        return
    rt = api.registry.by_key(SERVICE_ACCOUNTS_KEY)
    assert rt is not None
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_ACCOUNT}}
    meta.prepare_create(account, rt, namespace, api.clock())
    api.store.create(SERVICE_ACCOUNTS_KEY, account)
