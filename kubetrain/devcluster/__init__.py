"""devcluster: an emulated Kubernetes API server, simulated kubelet and gang scheduler for
integration tests and `kubetrain dev`.

Rooms: `apiserver/` (the kube-apiserver emulation), `admission/` (the webhook chain),
`controllers/` (in-process garbage collection and namespace/CRD controllers), `kubelet/` (the
simulated kubelet), `gang/` (the simulated Volcano / scheduler-plugins) and `client.py` (the raw
API client the simulated components share). Callers use the names re-exported here.
"""

from kubetrain.devcluster.apiserver.endpoints.server import DevCluster
from kubetrain.devcluster.gang.crds import podgroup_crd
from kubetrain.devcluster.gang.simulator import GangSchedulerSimulator
from kubetrain.devcluster.kubelet.simulator import PodSimulator

__all__ = ["DevCluster", "GangSchedulerSimulator", "PodSimulator", "podgroup_crd"]
