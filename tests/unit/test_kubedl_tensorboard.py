"""`kubedl.io/tensorboard-config`: validated naming the annotation and field; `kubetrain render`
shows the TensorBoard pod (the first replica type's volumes and mounts, the logDir), its Service
and the Ingress; the pod carries no gang scheduling."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain.commands.render import render_job
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job

TB = "kubedl.io/tensorboard-config"


def job(config: Any) -> dict[str, Any]:
    template = {
        "spec": {
            "volumes": [{"name": "logs", "persistentVolumeClaim": {"claimName": "runs"}}],
            "nodeSelector": {"pool": "cpu"},
            "containers": [
                {
                    "name": "pytorch",
                    "image": "pytorch/pytorch:2.3",
                    "volumeMounts": [{"name": "logs", "mountPath": "/runs"}],
                    "resources": {"limits": {"nvidia.com/gpu": 8}},
                }
            ],
        }
    }
    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "bert",
            "namespace": "ns",
            "annotations": {TB: config if isinstance(config, str) else json.dumps(config)},
        },
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template},
            }
        },
    }


def test_render_shows_the_tensorboard_pod_service_and_ingress() -> None:
    children, errors = render_job(
        job(
            {
                "logDir": "/runs/bert",
                "image": "tensorflow/tensorflow:2.16.1",
                "ingressSpec": {"host": "tb.example.com", "pathPrefix": "/bert"},
            }
        ),
        gang_scheduler="volcano",
    )
    assert errors == []
    by_name = {(c["kind"], c["metadata"]["name"]): c for c in children}
    pod = by_name[("Pod", "bert-tensorboard-0")]
    assert pod["spec"]["volumes"] == [{"name": "logs", "persistentVolumeClaim": {"claimName": "runs"}}]
    assert pod["spec"]["nodeSelector"] == {"pool": "cpu"}
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "tensorflow/tensorflow:2.16.1"
    assert container["command"] == [
        "tensorboard",
        "--logdir",
        "/runs/bert",
        "--host",
        "0.0.0.0",
        "--port",
        "6006",
        "--path_prefix",
        "/bert/ns/bert",  # KubeDL's <pathPrefix>/<namespace>/<job>
    ]
    assert container["volumeMounts"] == [{"name": "logs", "mountPath": "/runs"}]
    assert "resources" not in container  # no GPUs for TensorBoard
    worker = by_name[("Pod", "bert-worker-0")]
    assert worker["spec"]["schedulerName"] == "volcano"  # the job's pods are gang scheduled
    assert "schedulerName" not in pod["spec"]  # TensorBoard is not part of the gang
    assert list(pod["metadata"]["annotations"]) == ["kubetrain.io/tensorboard-config-hash"]
    assert pod["metadata"]["labels"]["kubetrain.io/replica-type"] == "tensorboard"
    service = by_name[("Service", "bert-tensorboard")]
    assert service["spec"]["selector"] == {
        "kubetrain.io/job-name": "bert",
        "kubetrain.io/replica-type": "tensorboard",
    }
    ingress = by_name[("Ingress", "bert-tensorboard")]
    rule = ingress["spec"]["rules"][0]
    assert rule["host"] == "tb.example.com" and rule["http"]["paths"][0]["path"] == "/bert/ns/bert/"
    assert pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] == "/bert/ns/bert/"
    assert sum(1 for c in children if c["kind"] == "Pod") == 4


def _ingress_path(obj: dict[str, Any]) -> str:
    children, errors = render_job(obj)
    assert errors == []
    (ingress,) = [c for c in children if c["kind"] == "Ingress"]
    return str(ingress["spec"]["rules"][0]["http"]["paths"][0]["path"])


def test_jobs_sharing_an_ingress_spec_get_their_own_paths_as_in_kubedl() -> None:
    # KubeDL's docs: TensorBoard is at http://<host>/<pathPrefix>/<job namespace>/<job name>, so
    # every job may carry the same ingressSpec; the path of one job never routes to another's.
    config = {"logDir": "/runs", "ingressSpec": {"host": "tb.example.com", "pathPrefix": "/tb"}}
    bert, gpt = job(config), job(config)
    gpt["metadata"]["name"] = "gpt"
    other_ns = job(config)
    other_ns["metadata"]["namespace"] = "team-b"
    assert [_ingress_path(bert), _ingress_path(gpt), _ingress_path(other_ns)] == [
        "/tb/ns/bert/",
        "/tb/ns/gpt/",
        "/tb/team-b/bert/",
    ]
    # The root prefix (the default) still names the job: KubeDL's path.Join("/", "", ns, name).
    assert _ingress_path(job({"logDir": "/runs", "ingressSpec": {"host": "tb.example.com"}})) == "/ns/bert/"


@pytest.mark.parametrize(
    ("prefix", "path"), [("tb", "/tb/ns/bert/"), ("/tb/", "/tb/ns/bert/"), ("a//b", "/a/b/ns/bert/")]
)
def test_a_path_prefix_is_joined_as_kubedl_joins_it(prefix: str, path: str) -> None:
    # KubeDL's path.Join("/", pathPrefix, …): a prefix without its leading '/' is the same path.
    assert _ingress_path(job({"logDir": "/runs", "ingressSpec": {"pathPrefix": prefix}})) == path


def test_without_the_annotation_there_is_no_tensorboard() -> None:
    obj = job({"logDir": "/runs"})
    obj["metadata"].pop("annotations")
    children, _ = render_job(obj)
    assert not any("tensorboard" in c["metadata"]["name"] for c in children)


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({}, ".logDir", "Required"),
        ({"logDir": "runs"}, ".logDir", "absolute path"),
        ({"logDir": "/runs", "ttlSecondsAfterJobFinished": -1}, ".ttlSecondsAfterJobFinished", ">= 0"),
        (
            {"logDir": "/runs", "ingressSpec": {"host": "x", "path": "/"}},
            ".ingressSpec.path",
            "unknown field",
        ),
        (
            {"logDir": "/runs", "ingressSpec": {"pathPrefix": 7}},
            ".ingressSpec.pathPrefix",
            "must be a string",
        ),
        ({"logDir": "/runs", "logdir": "/x"}, ".logdir", "unknown field"),
        (
            {"logDir": "/runs", "ingressSpec": {"host": "tb.example.com:8080"}},
            ".ingressSpec.host",
            "DNS name",
        ),
        ({"logDir": "/runs", "ingressSpec": {"host": "10.0.0.7"}}, ".ingressSpec.host", "not an IP address"),
        (
            {"logDir": "/runs", "ingressSpec": {"pathPrefix": "/a%2Fb"}},
            ".ingressSpec.pathPrefix",
            "'%2F'",
        ),
        (
            # An annotation key is a qualified name (the API server's rule, case-insensitive):
            # any other key would make every create of the Ingress fail.
            {"logDir": "/runs", "ingressSpec": {"annotations": {"nginx/rewrite target": "/"}}},
            ".ingressSpec.annotations[nginx/rewrite target]",
            "name part",
        ),
        (
            {"logDir": "/runs", "ingressSpec": {"annotations": {"-x.example.com/a": "/"}}},
            ".ingressSpec.annotations[-x.example.com/a]",
            "DNS-1123 subdomain",
        ),
        (
            {"logDir": "/runs", "ingressSpec": {"annotations": {"a/b/c": "/"}}},
            ".ingressSpec.annotations[a/b/c]",
            "DNS-1123 subdomain",
        ),
        ("[]", "", "must be a JSON object"),
    ],
)
def test_malformed_config_is_refused_naming_annotation_and_field(
    config: Any, path: str, message: str
) -> None:
    errors = validate_job(default_job(job(config)).obj).errors
    assert [e.path for e in errors] == [f"metadata.annotations[{TB}]{path}"]
    assert message in str(errors[0])


def test_ingress_annotation_keys_are_checked_case_insensitively_as_the_api_server_does() -> None:
    keys = {"Nginx.Ingress.Kubernetes.io/Rewrite-Target": "/", "kubernetes.io/ingress.class": "nginx"}
    config = {"logDir": "/runs", "ingressSpec": {"annotations": keys}}
    assert validate_job(default_job(job(config)).obj).errors == []


def test_a_wildcard_ingress_host_is_accepted() -> None:
    config = {"logDir": "/runs", "ingressSpec": {"host": "*.tb.example.com"}}
    assert validate_job(default_job(job(config)).obj).errors == []


def test_remote_log_dir_is_accepted() -> None:
    assert validate_job(default_job(job({"logDir": "gs://bucket/runs"})).obj).errors == []


def test_the_tensorboard_pod_carries_the_jobs_tenancy_and_kubedls_labels() -> None:
    # Tenancy labels are on every pod of the job (`kubectl get pods -l tenancy…` lists the
    # TensorBoard too); in KubeDL's group it carries KubeDL's pod labels, as KubeDL's own
    # TensorBoard pod does (replica-type tensorboard, which KubeDL's console selects it by).
    from kubedl_examples import example_job

    obj = example_job("tf/tf_job_mnist.yaml", "ns")
    obj["metadata"]["annotations"] = {
        TB: json.dumps({"logDir": "/runs"}),
        "kubedl.io/tenancy": json.dumps({"tenant": "vision", "user": "ana"}),
    }
    children, errors = render_job(obj)
    assert errors == []
    (board,) = [c for c in children if c["metadata"]["name"] == "mnist-tensorboard-0"]
    labels = board["metadata"]["labels"]
    assert labels["tenancy.kubetrain.io/tenant"] == "vision" and labels["tenancy.kubetrain.io/user"] == "ana"
    assert {k: labels[k] for k in ("group-name", "job-name", "replica-type", "replica-index")} == {
        "group-name": "training.kubedl.io",
        "job-name": "mnist",
        "replica-type": "tensorboard",
        "replica-index": "0",
    }
    # A kubetrain.io job's TensorBoard pod gets the tenancy labels but not KubeDL's.
    children, _ = render_job(job({"logDir": "/runs"}))
    (board,) = [c for c in children if c["metadata"]["name"] == "bert-tensorboard-0"]
    assert "group-name" not in board["metadata"]["labels"]


def _tf_job(replicas: dict[str, bool]) -> dict[str, Any]:
    """A TFJob whose replica types (in this order) mount the logs volume or not."""

    def template(mounts: bool, rtype: str) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "tensorflow", "image": f"tf/{rtype.lower()}:1"}
        volumes = []
        if mounts:
            container["volumeMounts"] = [{"name": "logs", "mountPath": "/logs"}]
            volumes = [{"name": "logs", "persistentVolumeClaim": {"claimName": "runs"}}]
        return {"spec": {"volumes": volumes, "containers": [container]}}

    return {
        "apiVersion": "kubetrain.io/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "ns", "annotations": {TB: json.dumps({"logDir": "/logs"})}},
        "spec": {
            "tfReplicaSpecs": {
                rtype: {"replicas": 1, "template": template(mounts, rtype)}
                for rtype, mounts in replicas.items()
            }
        },
    }


@pytest.mark.parametrize(
    ("replicas", "image"),
    [
        ({"PS": False, "Worker": True}, "tf/worker:1"),
        ({"PS": False, "Worker": False, "Chief": True}, "tf/chief:1"),
        ({"Evaluator": False, "Master": True, "Worker": False}, "tf/master:1"),
    ],
)
def test_the_tensorboard_pod_is_made_from_the_chief_master_or_worker_as_in_kubedl(
    replicas: dict[str, bool], image: str
) -> None:
    # KubeDL's TFJob controller builds it from getMasterSpec: Chief, else Master, else Worker —
    # never the PS, which does not write the summaries (nor, usually, mount their volume).
    children, errors = render_job(_tf_job(replicas))
    assert errors == []
    (board,) = [c for c in children if c["metadata"]["name"] == "tf-tensorboard-0"]
    (container,) = board["spec"]["containers"]
    assert container["image"] == image
    assert container["volumeMounts"] == [{"name": "logs", "mountPath": "/logs"}]
    assert board["spec"]["volumes"] == [{"name": "logs", "persistentVolumeClaim": {"claimName": "runs"}}]


def test_the_tensorboard_ingress_and_service_carry_kubedls_labels() -> None:
    # KubeDL's console finds a job's TensorBoard Ingress by replica-type=tensorboard and
    # job-name (ListIngressInstances); KubeDL labels its Ingress group-name, job-name,
    # replica-type, replica-index (syncIngress) and its Service replica-type, replica-index
    # (syncService).
    from kubedl_examples import example_job

    obj = example_job("tf/tf_job_mnist.yaml", "ns")
    obj["metadata"]["annotations"] = {TB: json.dumps({"logDir": "/runs", "ingressSpec": {"host": "tb.io"}})}
    children, errors = render_job(obj)
    assert errors == []
    by_kind = {c["kind"]: c for c in children if c["metadata"]["name"] == "mnist-tensorboard"}
    ingress = by_kind["Ingress"]["metadata"]["labels"]
    assert {k: ingress.get(k) for k in ("group-name", "job-name", "replica-type", "replica-index")} == {
        "group-name": "training.kubedl.io",
        "job-name": "mnist",
        "replica-type": "tensorboard",
        "replica-index": "0",
    }
    service = by_kind["Service"]["metadata"]["labels"]
    assert {k: service.get(k) for k in ("replica-type", "replica-index")} == {
        "replica-type": "tensorboard",
        "replica-index": "0",
    }
    # A kubetrain.io job's Ingress and Service carry none of KubeDL's labels.
    children, _ = render_job(job({"logDir": "/runs", "ingressSpec": {"host": "tb.io"}}))
    for child in children:
        if child["metadata"]["name"] == "bert-tensorboard":
            assert not {"group-name", "job-name", "replica-type"} & set(child["metadata"]["labels"])
