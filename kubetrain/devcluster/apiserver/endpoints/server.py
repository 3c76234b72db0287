"""DevCluster: the emulated kube-apiserver on loopback (HTTPS with a generated CA, or HTTP).

    async with DevCluster() as cluster:          # or: await cluster.start() ... await cluster.stop()
        cluster.url, cluster.kubeconfig_path     # point kubernetes-asyncio, kubectl or kubetrain at it
        cluster.faults.fail(verb="create", resource="pods", nth=2, status=500)
        cluster.requests.count(verb="list", resource="pods")

The kubeconfig authenticates with a bearer token (any request without a token is served as
system:anonymous; a wrong token gets 401). Namespaces default, kube-system, kube-public and
kube-node-lease exist from the start, and once started so does the `default/kubernetes` Service
(10.96.0.1:443, with Endpoints and an EndpointSlice pointing at this server; kubernetesservice.py).

Authorization is off by default (every authenticated request is allowed). With
`DevCluster(authorization="RBAC")` requests are authorized like kube-apiserver's
`--authorization-mode=RBAC` (kubetrain.devcluster.apiserver.auth.rbac): the admin token is in system:masters
(always allowed); `add_service_account_token(namespace, name)` returns a token that authenticates
as that ServiceAccount (while it exists), `write_token_kubeconfig(path, token)` writes a kubeconfig
for it; Roles/ClusterRoles/RoleBindings/ClusterRoleBindings in the store decide, and every
refused request is in `denials` (and in `requests` with code 403).

Events expire `event_ttl` seconds (default 3600) after their last write, as with kube-apiserver's
`--event-ttl` (eventttl.py; 0 keeps them). Every `compaction_interval` seconds (default 300) the
history is compacted to the resourceVersion of one interval earlier, as kube-apiserver compacts
etcd (`--etcd-compaction-interval`, compaction.py; 0 never compacts by time): older watches and
continue tokens get 410 Gone. `requests` keeps the newest `request_log_limit` requests
(accounting.py), `denials` the newest `denials_limit` refusals.

Over HTTPS a TLS handshake must complete within `handshake_timeout` seconds (default 10; asyncio's
own is 60): a client that connects and never finishes its ClientHello is closed then.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import secrets
import shutil
import ssl
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from kubetrain.devcluster.admission.chain import AdmissionChain
from kubetrain.devcluster.apiserver.auth import rbac
from kubetrain.devcluster.apiserver.auth.authn import DENIALS_KEPT
from kubetrain.devcluster.apiserver.base.background import BackgroundTask, every
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.endpoints.handlers import Handlers
from kubetrain.devcluster.apiserver.harness.accounting import DEFAULT_LIMIT, RequestLog
from kubetrain.devcluster.apiserver.harness.faults import FaultInjector
from kubetrain.devcluster.apiserver.kinds import kubernetesservice, meta, priorityclasses
from kubetrain.devcluster.apiserver.kinds.resources import NAMESPACES_KEY, Registry
from kubetrain.devcluster.apiserver.storage.compaction import (
    DEFAULT_COMPACTION_INTERVAL,
    Compactor,
    check_interval,
)
from kubetrain.devcluster.apiserver.storage.eventttl import DEFAULT_EVENT_TTL, EventExpiry
from kubetrain.devcluster.apiserver.storage.store import Store
from kubetrain.devcluster.apiserver.verbs.core import ApiServer
from kubetrain.devcluster.controllers.gc import Controllers
from kubetrain.serving.guard import GuardedTCPSite

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# A TLS handshake must complete within this (asyncio's default is 60 s): a client that opens a
# connection and never finishes its ClientHello is closed, as on kubetrain's own servers.
HANDSHAKE_SECONDS = 10.0


class DevCluster:
    def __init__(
        self,
        *,
        tls: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        workdir: str | None = None,
        watch_window: int = 1000,
        service_ports: dict[tuple[str, str, int], int] | None = None,
        bookmark_interval: float = 60.0,  # kube-apiserver's: a minute (watchstream.py)
        clock: Callable[[], datetime] = meta.utcnow,
        authorization: str = "AlwaysAllow",
        event_ttl: float = DEFAULT_EVENT_TTL,  # kube-apiserver's --event-ttl, seconds (0: never)
        request_log_limit: int = DEFAULT_LIMIT,
        compaction_interval: float = DEFAULT_COMPACTION_INTERVAL,  # --etcd-compaction-interval, s (0: never)
        denials_limit: int = DENIALS_KEPT,
        handshake_timeout: float = HANDSHAKE_SECONDS,
    ) -> None:
        if authorization not in ("AlwaysAllow", "RBAC"):
            raise ValueError(f'authorization must be "AlwaysAllow" or "RBAC", not {authorization!r}')
        if denials_limit < 1:  # checked before anything is created (the workdir)
            raise ValueError(f"denials limit must be at least 1, not {denials_limit}")
        check_interval(compaction_interval)
        if not handshake_timeout > 0:
            raise ValueError(f"handshake timeout must be more than 0 seconds, not {handshake_timeout}")
        self.handshake_timeout = handshake_timeout
        self.tls = tls
        self.host = host
        self.port = port
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="devcluster-"))
        self.store = Store(watch_window)
        self.registry = Registry()
        self.admission = AdmissionChain(service_ports)
        self.api = ApiServer(self.store, self.registry, self.admission, clock)
        self.controllers = Controllers(self.api)
        self.faults = FaultInjector(self.store)
        self.requests = RequestLog(request_log_limit)
        self.event_expiry = EventExpiry(self.store, self.api.clock, event_ttl)
        self.compactor = Compactor(self.store, self.api.clock, compaction_interval)
        self.token = secrets.token_urlsafe(24)
        self.handlers = Handlers(self.api, self.faults, self.requests, self.token, bookmark_interval)
        self.handlers.auth.keep_denials(denials_limit)
        self.url = ""
        self.kubeconfig_path = str(self.workdir / "kubeconfig")
        self.ca_path = str(self.workdir / "ca.crt")
        self.ca_pem = ""  # the CA's certificate (PEM), once started with TLS
        self._runner: web.AppRunner | None = None
        self._kubernetes_service = BackgroundTask(
            "devcluster-kubernetes-service",
            lambda: every(kubernetesservice.INTERVAL, self.ensure_kubernetes_service),
        )
        for name in INITIAL_NAMESPACES:
            self._seed_namespace(name)
        self._seed_priority_classes()
        self.authorization = authorization
        if authorization == "RBAC":
            self.handlers.auth.authorizer = rbac.Authorizer(self.store)
            self._seed_rbac_policy()

    @property
    def service_ports(self) -> dict[tuple[str, str, int], int]:
        """(namespace, service, port) -> loopback port used for webhook service references (mutable)."""
        return self.admission.service_ports

    def _seed_namespace(self, name: str) -> None:
        ns: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        rt = self.registry.by_key(NAMESPACES_KEY)
        assert rt is not None
        meta.prepare_create(ns, rt, "", self.api.clock())
        ns["spec"] = {"finalizers": ["kubernetes"]}
        ns["status"] = {"phase": "Active"}
        ns["metadata"]["labels"] = {"kubernetes.io/metadata.name": name}
        self.store.create(NAMESPACES_KEY, ns)

    def _seed_priority_classes(self) -> None:
        """The system PriorityClasses (storage_scheduling.go `AddSystemPriorityClasses`)."""
        rt = self.registry.by_key(priorityclasses.PRIORITY_CLASSES_KEY)
        assert rt is not None
        for pc in priorityclasses.system_classes():
            meta.prepare_create(pc, rt, "", self.api.clock())
            priorityclasses.default_priority_class(pc, None)
            self.store.create(rt.key, pc)

    def _seed_rbac_policy(self) -> None:
        """The default ClusterRoles and ClusterRoleBindings a cluster starts with."""
        for key, objects in (
            (rbac.CLUSTER_ROLES_KEY, rbac.BOOTSTRAP_CLUSTER_ROLES),
            (rbac.CLUSTER_ROLE_BINDINGS_KEY, rbac.BOOTSTRAP_CLUSTER_ROLE_BINDINGS),
        ):
            rt = self.registry.by_key(key)
            assert rt is not None
            for obj in objects:
                obj = copy.deepcopy(obj)
                meta.prepare_create(obj, rt, "", self.api.clock())
                self.store.create(key, obj)

    @property
    def denials(self) -> list[rbac.Denial]:
        """Requests the authorizer refused (403), the newest `denials_limit` of them, oldest first;
        empty without authorization."""
        return list(self.handlers.auth.denials)

    def add_service_account_token(self, namespace: str, name: str) -> str:
        """A bearer token that authenticates as ServiceAccount `namespace/name`: user
        `system:serviceaccount:<namespace>:<name>`, groups system:serviceaccounts,
        system:serviceaccounts:<namespace>, system:authenticated. Like kube's ServiceAccount
        tokens, it is refused (401) while the ServiceAccount object does not exist."""
        token = secrets.token_urlsafe(24)
        self.handlers.auth.identities[token] = rbac.service_account_user(namespace, name)
        return token

    def write_token_kubeconfig(self, path: str, token: str, namespace: str = "default") -> str:
        """A kubeconfig file for this server that authenticates with `token`."""
        config = self.kubeconfig()
        config["users"][0]["user"] = {"token": token}
        config["contexts"][0]["context"]["namespace"] = namespace
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        target.chmod(0o600)
        return str(target)

    async def __aenter__(self) -> DevCluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _ssl_context(self) -> ssl.SSLContext:
        from kubetrain.certs.generate import generate_bundle

        names = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
        bundle = generate_bundle(names, [self.host] if self.host[0].isdigit() else ["127.0.0.1"])
        cert = self.workdir / "apiserver.crt"
        key = self.workdir / "apiserver.key"
        Path(self.ca_path).write_bytes(bundle.ca.cert_pem)
        self.ca_pem = bundle.ca.cert_pem.decode()
        cert.write_bytes(bundle.serving.cert_pem)
        key.write_bytes(bundle.serving.key_pem)
        key.chmod(0o600)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(cert), str(key))
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    async def start(self) -> None:
        if self._runner is not None:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        ssl_ctx = self._ssl_context() if self.tls else None
        self.controllers.start()
        self.event_expiry.start()
        self.compactor.start()
        if self.tls:  # kube-root-ca.crt in every namespace, as kube-controller-manager publishes it
            self.controllers.publish_root_ca(self.ca_pem)
        app = self.handlers.app()
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = GuardedTCPSite(
            self._runner,
            self.host,
            self.port,
            ssl_context=ssl_ctx,
            backlog=1024,
            handshake_timeout=self.handshake_timeout,
        )
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://{self.host}:{self.port}"
        self.handlers.server_address = f"{self.host}:{self.port}"
        self.ensure_kubernetes_service()
        self._kubernetes_service.start()
        self.write_kubeconfig(self.kubeconfig_path)

    def ensure_kubernetes_service(self) -> None:
        """The `default/kubernetes` Service, Endpoints and EndpointSlice pointing at this server,
        created or put back (kubernetesservice.py); runs at start and every 10 s."""
        address = self.host if self.host[0].isdigit() else "127.0.0.1"
        ns = self.store.get(NAMESPACES_KEY, "", kubernetesservice.NAMESPACE)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        keys = (kubernetesservice.SERVICES_KEY, kubernetesservice.ENDPOINTS_KEY, kubernetesservice.SLICES_KEY)
        current = {k: self.store.get(k, kubernetesservice.NAMESPACE, kubernetesservice.NAME) for k in keys}
        ips = self.api.services.ranges.ips
        taken = ips.key(ips.first_ip()) in self.api.services.in_use()[0]
        for key, obj, create in kubernetesservice.writes(current, taken, address, self.port):
            rt = self.registry.by_key(key)
            assert rt is not None
            with contextlib.suppress(LookupError, ValueError):  # changed meanwhile: the next pass
                if create:
                    meta.prepare_create(obj, rt, kubernetesservice.NAMESPACE, self.api.clock())
                    self.store.create(key, obj)
                else:
                    self.store.update(key, obj, obj["metadata"]["resourceVersion"])

    def kubeconfig(self, user: str = "devcluster-admin") -> dict[str, Any]:
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(Path(self.ca_path).read_bytes()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "devcluster", "cluster": cluster}],
            "users": [{"name": user, "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": "devcluster",
                    "context": {"cluster": "devcluster", "user": user, "namespace": "default"},
                }
            ],
            "current-context": "devcluster",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str) -> str:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        target.chmod(0o600)
        return str(target)

    async def stop(self) -> None:
        self.store.close_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._kubernetes_service.stop()
        await self.controllers.stop()
        await self.event_expiry.stop()
        await self.compactor.stop()
        await self.admission.close()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    async def settle(self) -> None:
        """Wait until garbage collection / namespace cleanup queued so far has run."""
        await self.controllers.settle()

    # ---- direct access for tests and `kubetrain dev` ----------------------------------------
    def get_object(self, resource: str, namespace: str, name: str, group: str = "") -> Obj | None:
        key = f"{resource}.{group}" if group else resource
        return self.store.get(key, namespace, name)

    def list_objects(self, resource: str, namespace: str | None = None, group: str = "") -> list[Obj]:
        key = f"{resource}.{group}" if group else resource
        return list(self.store.items(key, namespace))
