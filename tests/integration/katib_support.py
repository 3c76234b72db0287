"""Katib's side of a trial, as tests/integration/test_katib_trials.py plays it against kubetrain.

Everything here follows github.com/kubeflow/katib (commit in tests/data/katib/README.md):

- `render_trial`: an Experiment's trialTemplate as Katib turns it into a Trial and its job —
  Experiment defaults (`setDefaultTrialTemplate` in
  pkg/apis/controller/experiments/v1beta1/experiment_defaults.go: successCondition,
  failureCondition and primaryPodLabels of a Kubeflow job kind or a TrainJob), `${trialParameters.<name>}`
  substitution (`applyParameters` in pkg/controller.v1beta1/experiment/manifest/generator.go),
  the job named after the trial in the trial's namespace, owned by the Trial as controller
  (`getDesiredJobSpec` in pkg/controller.v1beta1/trial/trial_controller.go).
- `gjson_matches`: `GetDeployedJobStatus` (pkg/controller.v1beta1/trial/util/job_util.go) — a
  condition expression matches when GJSON yields an object or a non-empty array. Only the GJSON
  forms Katib's defaults and examples use are implemented (a dotted path ending in a `#(k=="v")#`
  query, then `|#(k=="v")#` filters); anything else raises.
- `KatibPodWebhook`: the `mutator.pod.katib.kubeflow.org` webhook (manifests/v1beta1/components/
  webhook/webhooks.yaml; `SidecarInjector.Handle` in pkg/webhook/v1beta1/pod/inject_webhook.go)
  over HTTPS: a pod whose owner chain reaches a Trial gets the trial's labels and
  `katib.kubeflow.org/trial`, `KATIB_TRIAL_NAME` in its primary container and — only if it is a
  primary pod (`isPrimaryPod`: every primaryPodLabel present with its value) — the metrics
  collector (StdOut: `metrics-logger-and-collector`; TensorFlowEvent: `metrics-collector`)
  appended, shareProcessNamespace, the `metrics-volume` emptyDir on the metrics directory in both
  containers, and the primary container's command wrapped (`wrapWorkerContainer`).
"""

from __future__ import annotations

import base64
import copy
import json
import posixpath
import re
import ssl
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from kubetrain.certs.generate import generate_bundle
from kubetrain.kube.client import KubeClient
from kubetrain.kube.resources import ResourceRef

Obj = dict[str, Any]

DATA = Path(__file__).resolve().parents[1] / "data" / "katib"
TRIAL_API_VERSION = "kubeflow.org/v1beta1"
TRIALS = ResourceRef("kubeflow.org", "v1beta1", "trials", "Trial", True)
LABEL_EXPERIMENT = "katib.kubeflow.org/experiment"
LABEL_TRIAL = "katib.kubeflow.org/trial"
INJECTION_LABEL = "katib.kubeflow.org/metrics-collector-injection"
SIDECAR = "metrics-logger-and-collector"
METRICS_FILE = "/var/log/katib/metrics.log"

# experiments/v1beta1/constants.go
KUBEFLOW_JOB_SUCCESS = 'status.conditions.#(type=="Succeeded")#|#(status=="True")#'
KUBEFLOW_JOB_FAILURE = 'status.conditions.#(type=="Failed")#|#(status=="True")#'
KUBEFLOW_PRIMARY_POD_LABELS = {"training.kubeflow.org/job-role": "master"}
KUBEFLOW_JOB_KINDS = ("TFJob", "PyTorchJob", "XGBoostJob", "MPIJob")
TRAINJOB_SUCCESS = 'status.conditions.#(type=="Complete")#|#(status=="True")#'
TRAINJOB_FAILURE = KUBEFLOW_JOB_FAILURE
TRAINJOB_PRIMARY_POD_LABELS = {
    "jobset.sigs.k8s.io/replicatedjob-name": "node",
    "batch.kubernetes.io/job-completion-index": "0",
}

TRIAL_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trials.kubeflow.org"},
    "spec": {
        "group": "kubeflow.org",
        "scope": "Namespaced",
        "names": {"kind": "Trial", "plural": "trials", "singular": "trial", "listKind": "TrialList"},
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def experiment(file: str) -> Obj:
    loaded: Obj = yaml.safe_load((DATA / file).read_text())
    return loaded


def render_trial(exp: Obj, name: str, namespace: str, assignments: dict[str, str]) -> tuple[Obj, Obj]:
    """(Trial, job) for `assignments` (experiment parameter name → value). The Trial is returned
    without an owner; the job's controller ownerReference needs the created Trial's uid
    (`own_job`)."""
    template = copy.deepcopy(exp["spec"]["trialTemplate"])
    kind = template["trialSpec"]["kind"]
    trainjob = kind == "TrainJob"
    assert trainjob or kind in KUBEFLOW_JOB_KINDS, kind
    template.setdefault("successCondition", TRAINJOB_SUCCESS if trainjob else KUBEFLOW_JOB_SUCCESS)
    template.setdefault("failureCondition", TRAINJOB_FAILURE if trainjob else KUBEFLOW_JOB_FAILURE)
    if not template.get("primaryPodLabels"):
        template["primaryPodLabels"] = dict(
            TRAINJOB_PRIMARY_POD_LABELS if trainjob else KUBEFLOW_PRIMARY_POD_LABELS
        )
    text = json.dumps(template["trialSpec"])
    for param in template.get("trialParameters") or []:
        text = text.replace("${trialParameters." + param["name"] + "}", assignments[param["reference"]])
    assert "${trialParameters." not in text, text
    job: Obj = json.loads(text)
    job.setdefault("metadata", {}).update(name=name, namespace=namespace)
    trial = {
        "apiVersion": TRIAL_API_VERSION,
        "kind": "Trial",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {LABEL_EXPERIMENT: exp["metadata"]["name"]},
        },
        "spec": {
            "objective": exp["spec"]["objective"],
            "parameterAssignments": [{"name": k, "value": v} for k, v in assignments.items()],
            "runSpec": job,
            "metricsCollector": metrics_collector(exp),
            "primaryContainerName": template["primaryContainerName"],
            "primaryPodLabels": template["primaryPodLabels"],
            "successCondition": template["successCondition"],
            "failureCondition": template["failureCondition"],
        },
    }
    return trial, job


def metrics_collector(exp: Obj) -> Obj:
    """The Trial's metricsCollector: the Experiment's metricsCollectorSpec, collector StdOut by
    default (`setDefaultMetricsCollector`)."""
    spec = copy.deepcopy(exp["spec"].get("metricsCollectorSpec") or {})
    spec.setdefault("collector", {}).setdefault("kind", "StdOut")
    return spec


def collector_layout(trial: Obj) -> tuple[str, str, str]:
    """(sidecar container name, metrics path, directory mounted) of the Trial's collector, for
    the two kinds the examples use (`getSidecarContainerName`, `getMountPath`)."""
    mc = trial["spec"]["metricsCollector"]
    kind = mc["collector"]["kind"]
    if kind == "StdOut":
        return SIDECAR, METRICS_FILE, posixpath.dirname(METRICS_FILE)
    if kind == "TensorFlowEvent":
        path = mc["source"]["fileSystemPath"]["path"]
        return "metrics-collector", path, path
    raise ValueError(f"metrics collector kind {kind!r} is not one the examples use")


def own_job(job: Obj, trial: Obj) -> Obj:
    """controllerutil.SetControllerReference(trial, job): controller and blockOwnerDeletion."""
    owned = copy.deepcopy(job)
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": TRIAL_API_VERSION,
            "kind": "Trial",
            "name": trial["metadata"]["name"],
            "uid": trial["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return owned


_QUERY = re.compile(r'^#\((\w+)=="([^"]*)"\)#$')


def _query(part: str) -> tuple[str, str]:
    m = _QUERY.match(part)
    if m is None:
        raise ValueError(f"GJSON form {part!r} is not one Katib's defaults or examples use")
    return m.group(1), m.group(2)


def gjson_matches(obj: Obj, expression: str) -> bool:
    """True when Katib's trial controller would take `expression` as met on `obj`."""
    head, *filters = expression.split("|")
    *path, last = head.split(".")
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    key, want = _query(last)
    items = (
        [i for i in value or [] if isinstance(i, dict) and i.get(key) == want]
        if isinstance(value, list)
        else []
    )
    for f in filters:
        key, want = _query(f)
        items = [i for i in items if i.get(key) == want]
    return bool(items)


def is_primary_pod(pod_labels: dict[str, str], primary: dict[str, str]) -> bool:
    return all(pod_labels.get(k) == v for k, v in primary.items())


class KatibPodWebhook:
    """Katib's pod mutation as an HTTPS admission webhook; `mutated` records each pod it changed
    (name or generateName → whether the sidecar went in)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.mutated: dict[str, bool] = {}
        self.down = False  # answer 503, as while katib-controller restarts

    async def _trial_of(self, obj: Obj, namespace: str) -> Obj | None:
        """getKatibJob: the Trial owning `obj`, or owning an owner of it, recursively."""
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref["kind"] == "Trial" and ref["apiVersion"] == TRIAL_API_VERSION:
                return await self.kube.get(TRIALS, namespace, obj["metadata"]["name"])
        for ref in obj["metadata"].get("ownerReferences") or []:
            group, _, version = ref["apiVersion"].rpartition("/")
            plural = ref["kind"].lower() + "s"
            owner = await self.kube.get(
                ResourceRef(group, version, plural, ref["kind"], True), namespace, ref["name"]
            )
            trial = await self._trial_of(owner, namespace)
            if trial is not None:
                return trial
        return None

    def mutate(self, pod: Obj, trial: Obj) -> tuple[Obj, bool]:
        spec = trial["spec"]
        out = copy.deepcopy(pod)
        labels = out["metadata"].setdefault("labels", {})
        labels.update(trial["metadata"].get("labels") or {})
        labels[LABEL_TRIAL] = trial["metadata"]["name"]
        primary = next(
            (c for c in out["spec"]["containers"] if c["name"] == spec["primaryContainerName"]), None
        )
        if primary is not None:
            primary.setdefault("env", []).append(
                {
                    "name": "KATIB_TRIAL_NAME",
                    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{LABEL_TRIAL}']"}},
                }
            )
        if not is_primary_pod(pod["metadata"].get("labels") or {}, spec["primaryPodLabels"]):
            return out, False
        objective = spec["objective"]
        metrics = ";".join(
            [objective["objectiveMetricName"], *(objective.get("additionalMetricNames") or [])]
        )
        sidecar, path, directory = collector_layout(trial)
        stdout = sidecar == SIDECAR
        args = ["-t", trial["metadata"]["name"], "-m", metrics, "-o-type", objective["type"]]
        args += ["-s-db", "katib-db-manager.kubeflow:6789", "-path", path]
        formats = ((spec["metricsCollector"].get("source") or {}).get("filter") or {}).get("metricsFormat")
        if formats:
            args += ["-f", ";".join(formats)]
        if stdout:
            args += ["-format", "TEXT"]
        mount = {"name": "metrics-volume", "mountPath": directory}
        image = "file-metrics-collector" if stdout else "tfevent-metrics-collector"
        out["spec"]["containers"].append(
            {
                "name": sidecar,
                "image": f"ghcr.io/kubeflow/katib/{image}:latest",
                "args": args,
                "volumeMounts": [mount],
            }
        )
        out["spec"]["shareProcessNamespace"] = True
        out["spec"].setdefault("volumes", []).append({"name": "metrics-volume", "emptyDir": {}})
        if primary is not None:
            primary.setdefault("volumeMounts", []).append(dict(mount))
            # getContainerCommand reads the image's entrypoint when the container has no command
            # (a registry lookup); the examples' images are not pulled here, so use args alone.
            line = [*(primary.get("command") or []), *(primary.get("args") or [])]
            command = ["sh", "-c"]
            if line[:2] in (["sh", "-c"], ["bash", "-c"]):
                command, line = line[:2], line[2:]
            if stdout:
                line.append(f"1>{path} 2>&1")
            line += ["&&", f"echo completed > {directory}/$$$$.pid"]
            primary["command"] = command
            primary["args"] = [" ".join(line)]
        return out, True

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        if self.down:
            return web.Response(status=503, text="katib-controller is not ready")
        req = review["request"]
        pod = req["object"]
        response: Obj = {"uid": req["uid"], "allowed": True}
        trial = await self._trial_of(pod, req["namespace"])
        if trial is not None:
            mutated, sidecar = self.mutate(pod, trial)
            self.mutated[pod["metadata"].get("name") or pod["metadata"].get("generateName", "")] = sidecar
            patch = [
                {"op": "replace", "path": "/metadata", "value": mutated["metadata"]},
                {"op": "replace", "path": "/spec", "value": mutated["spec"]},
            ]
            response.update(
                patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode()
            )
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    def configuration(self, url: str, ca_pem: bytes) -> Obj:
        """Katib's pod webhook entry: pods on CREATE in namespaces labelled for injection."""
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "katib.kubeflow.org"},
            "webhooks": [
                {
                    "name": "mutator.pod.katib.kubeflow.org",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
                    "namespaceSelector": {"matchLabels": {INJECTION_LABEL: "enabled"}},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods"],
                        }
                    ],
                }
            ],
        }


@asynccontextmanager
async def katib_pod_webhook(kube: KubeClient) -> AsyncIterator[tuple[KatibPodWebhook, str, bytes]]:
    """The webhook served over TLS on loopback: (webhook, its /mutate-pod URL, CA PEM)."""
    hook = KatibPodWebhook(kube)
    bundle = generate_bundle(["localhost"], ["127.0.0.1"])
    app = web.Application()
    app.router.add_post("/mutate-pod", hook.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tls.crt").write_bytes(bundle.serving.cert_pem)
        (Path(tmp) / "tls.key").write_bytes(bundle.serving.key_pem)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(Path(tmp) / "tls.crt"), str(Path(tmp) / "tls.key"))
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield hook, f"https://127.0.0.1:{port}/mutate-pod", bundle.ca.cert_pem
    finally:
        await runner.cleanup()
