"""devcluster's pod spec and Service validation (kinds/podvalidation.py, servicevalidation.py):
the rules upstream applies, case by case, beyond what the conformance tests send a server."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.kinds import (
    builtins,
    envvalidation,
    objectmeta,
    podvalidation,
    servicefields,
    servicevalidation,
)


def spec_causes(**spec: Any) -> list[tuple[str, str, str]]:
    spec.setdefault("containers", [{"name": "c", "image": "busybox"}])
    return [(c.reason, c.field, c.message) for c in podvalidation.pod_spec_causes(spec, creating=True)]


def test_port_name_problems_follow_is_valid_port_name() -> None:
    assert objectmeta.port_name_problems("pytorchjob-port") == []
    assert objectmeta.port_name_problems("a" * 16) == ["must be no more than 15 characters"]
    assert objectmeta.port_name_problems("123") == ["must contain at least one letter (a-z)"]
    assert objectmeta.port_name_problems("a--b") == ["must not contain consecutive hyphens"]
    assert objectmeta.port_name_problems("-ab") == ["must not begin or end with a hyphen"]
    assert objectmeta.port_name_problems("A_") == [
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        "must contain at least one letter (a-z)",
    ]


def test_env_names_are_any_printable_ascii_but_equals() -> None:
    assert envvalidation.env_name_problems("1st.var-name with space!") == []
    assert envvalidation.env_name_problems("tab\there") == [envvalidation.RELAXED_ENV_NAME]
    assert envvalidation.env_name_problems("é") == [envvalidation.RELAXED_ENV_NAME]
    assert spec_causes(containers=[{"name": "c", "image": "i", "env": [{"value": "x"}]}]) == [
        ("FieldValueRequired", "spec.containers[0].env[0].name", "Required value")
    ]


def test_port_names_are_unique_per_container_not_per_pod() -> None:
    port = {"name": "p", "containerPort": 1, "protocol": "TCP"}
    two = [{"name": "a", "image": "i", "ports": [port]}, {"name": "b", "image": "i", "ports": [port]}]
    assert spec_causes(containers=two) == []
    assert spec_causes(
        containers=[{"name": "a", "image": "i", "ports": [port, {**port, "containerPort": 2}]}]
    ) == [("FieldValueDuplicate", "spec.containers[0].ports[1].name", 'Duplicate value: "p"')]


def test_port_numbers_and_protocol() -> None:
    ports = [{"protocol": "TCP"}, {"containerPort": 8080, "hostPort": 0, "protocol": "TCP"}]
    ports.append({"containerPort": 1, "hostPort": 65536, "protocol": "TCP"})
    ports.append({"containerPort": 2})
    assert spec_causes(containers=[{"name": "c", "image": "i", "ports": ports}]) == [
        ("FieldValueRequired", "spec.containers[0].ports[0].containerPort", "Required value"),
        (
            "FieldValueInvalid",
            "spec.containers[0].ports[2].hostPort",
            "Invalid value: 65536: must be between 1 and 65535, inclusive",
        ),
        ("FieldValueRequired", "spec.containers[0].ports[3].protocol", "Required value"),
    ]


def test_container_names_required_and_duplicates_across_kinds() -> None:
    assert spec_causes(
        containers=[{"image": "i"}, {"name": "a", "image": "i"}, {"name": "a", "image": "i"}]
    ) == [
        ("FieldValueRequired", "spec.containers[0].name", "Required value"),
        ("FieldValueDuplicate", "spec.containers[2].name", 'Duplicate value: "a"'),
    ]
    assert spec_causes(initContainers=[{"name": "i", "image": "x"}, {"name": "i", "image": "x"}]) == [
        ("FieldValueDuplicate", "spec.initContainers[1].name", 'Duplicate value: "i"')
    ]


def test_a_mount_of_an_invalid_volume_is_not_found() -> None:
    """ValidateVolumes leaves a volume with errors out of the pod's volumes, as upstream does."""
    c = {"name": "c", "image": "i", "volumeMounts": [{"name": "cfg", "mountPath": "/a"}]}
    assert spec_causes(containers=[c], volumes=[{"name": "cfg", "configMap": {}}]) == [
        ("FieldValueRequired", "spec.volumes[0].configMap.name", "Required value"),
        ("FieldValueNotFound", "spec.containers[0].volumeMounts[0].name", 'Not found: "cfg"'),
    ]
    mounts = [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}, {"name": "v"}]
    c = {"name": "c", "image": "i", "volumeMounts": mounts}
    assert spec_causes(containers=[c], volumes=[{"name": "v", "emptyDir": {}}]) == [
        (
            "FieldValueInvalid",
            "spec.containers[0].volumeMounts[1].mountPath",
            'Invalid value: "/a": must be unique',
        ),
        ("FieldValueRequired", "spec.containers[0].volumeMounts[2].mountPath", "Required value"),
    ]


def test_volume_sources_forbidden_in_upstream_order_with_its_spellings() -> None:
    vol = {"name": "v", "secret": {"secretName": "s"}, "downwardAPI": {}, "cephfs": {}}
    assert spec_causes(volumes=[vol]) == [
        ("FieldValueForbidden", "spec.volumes[0].cephFS", podvalidation.MORE_THAN_ONE),
        ("FieldValueForbidden", "spec.volumes[0].downwarAPI", podvalidation.MORE_THAN_ONE),
    ]
    assert (
        spec_causes(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}, "emptyDir": None}])
        == []
    )


def test_resources() -> None:
    def causes(resources: dict[str, Any]) -> list[tuple[str, str, str]]:
        return spec_causes(containers=[{"name": "c", "image": "i", "resources": resources}])

    assert (
        causes({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1024Mi"}})
        == []
    )
    assert causes({"requests": {"memory": "2Gi"}, "limits": {"memory": "1024Mi"}}) == [
        (
            "FieldValueInvalid",
            "spec.containers[0].resources.requests",
            'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
        )
    ]
    assert causes({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}) == [
        (
            "FieldValueInvalid",
            "spec.containers[0].resources.requests",
            'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2',
        )
    ]
    assert causes({"limits": {"cpu": "-1"}}) == [
        (
            "FieldValueInvalid",
            "spec.containers[0].resources.limits[cpu]",
            'Invalid value: "-1": must be greater than or equal to 0',
        )
    ]
    assert [c[2] for c in causes({"limits": {"gpu": "1"}})] == [
        'Invalid value: "gpu": must be a standard resource type or fully qualified',
        'Invalid value: "gpu": must be a standard resource for containers',
    ]
    assert [c[2] for c in causes({"limits": {"nvidia.com/gpu": "500m"}})] == [
        'Invalid value: "500m": must be an integer'
    ]


def test_limits_default_requests_on_pods() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}}]},
    }
    builtins.default_pod(pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}
    builtins.default_pod(pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def svc_causes(**spec: Any) -> list[tuple[str, str, str]]:
    """The causes of a Service created with `spec`, normalized as the registry does it first."""
    servicefields.normalize_cluster_ips(spec, None)
    return [(c.reason, c.field, c.message) for c in servicevalidation.validate_service({"spec": spec})]


def test_service_cluster_ip_and_type() -> None:
    assert svc_causes(clusterIP="None") == []
    assert svc_causes(type="ExternalName", externalName="db.example.com") == []
    assert svc_causes(clusterIP="10.0.0.300", ports=[{"port": 1, "protocol": "TCP", "targetPort": 1}]) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            f'Invalid value: "10.0.0.300": {servicevalidation.IP_MESSAGE}',
        )
    ]
    assert svc_causes(
        type="NodePort", clusterIP="None", ports=[{"port": 1, "protocol": "TCP", "targetPort": 1}]
    ) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            "Invalid value: \"None\": may not be set to 'None' for NodePort services",
        )
    ]
    assert svc_causes(type="Internal", clusterIP="None") == [
        (
            "FieldValueNotSupported",
            "spec.type",
            'Unsupported value: "Internal": supported values: '
            '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
        )
    ]


def test_service_selector_keys_are_label_keys() -> None:
    assert [c[:2] for c in svc_causes(clusterIP="None", selector={"a/b/c": "x"})] == [
        ("FieldValueInvalid", "spec.selector")
    ]


def test_service_target_port_defaults_to_port_when_zero_or_empty() -> None:
    svc: dict[str, Any] = {"metadata": {}, "spec": {"ports": [{"port": 80, "targetPort": 0}, {"port": 81}]}}
    builtins.default_service(svc)
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == [80, 81]


def test_env_value_from_names_one_source_and_a_downward_api_field() -> None:
    def causes(*env: dict[str, Any]) -> list[tuple[str, str, str]]:
        return spec_causes(containers=[{"name": "c", "image": "i", "env": list(env)}])

    ip = {"fieldRef": {"fieldPath": "status.podIP"}}
    index = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    assert causes({"name": "A", "valueFrom": ip}, {"name": "B", "valueFrom": index}) == []
    at = "spec.containers[0].env[0].valueFrom"
    assert causes({"name": "A", "value": "x", "valueFrom": ip}) == [
        ("FieldValueInvalid", at, 'Invalid value: "": may not be specified when `value` is not empty')
    ]
    assert causes({"name": "A", "valueFrom": {}}) == [
        ("FieldValueInvalid", at, f'Invalid value: "": {envvalidation.NO_SOURCE}')
    ]
    assert causes({"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}) == [
        (
            "FieldValueNotSupported",
            f"{at}.fieldRef.fieldPath",
            'Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", '
            '"metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", '
            '"status.podIP", "status.podIPs"',
        )
    ]
    assert causes({"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.podIp"}}}) == [
        (
            "FieldValueInvalid",
            f"{at}.fieldRef.fieldPath",
            'Invalid value: "status.podIp": error converting fieldPath: '
            "field label not supported: status.podIp",
        )
    ]
    assert causes({"name": "A", "valueFrom": {"fieldRef": {}}}) == [
        ("FieldValueRequired", f"{at}.fieldRef.fieldPath", "Required value")
    ]


def test_field_refs_default_their_api_version() -> None:
    env = [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "env": env}]},
    }
    builtins.default_pod(pod)
    assert env[0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "status.podIP"}


def test_host_network_pods_use_their_container_ports_on_the_host() -> None:
    ports = [
        {"containerPort": 29500, "protocol": "TCP"},
        {"containerPort": 9090, "hostPort": 9091, "protocol": "TCP"},
    ]
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "i", "ports": ports}]},
    }
    builtins.default_pod(pod)
    assert [p["hostPort"] for p in ports] == [29500, 9091]
    assert podvalidation.pod_spec_causes(pod["spec"], creating=True) == [
        podvalidation.invalid(
            "spec.containers[0].ports[1].hostPort",
            9091,
            "must match `containerPort` when `hostNetwork` is true",
        )
    ]


def update_causes(old_spec: dict[str, Any], **changes: Any) -> list[tuple[str, str, str]]:
    container = {"name": "c", "image": "busybox"}
    old = {"spec": {"containers": [container], "restartPolicy": "Always", **old_spec}}
    new = {"spec": {**old["spec"], **changes}}
    new["spec"] = {k: v for k, v in new["spec"].items() if v is not None}
    return [(c.reason, c.message, c.field) for c in builtins.validate_pod(new, old)]


def test_a_gated_pods_node_selector_may_gain_keys_as_kueue_ungates_it() -> None:
    gated = {"schedulingGates": [{"name": "kueue.x-k8s.io/topology"}], "nodeSelector": {"flavor": "a"}}
    # Kueue's TopologyUngater: the gate lifted and the domain's label added in one patch
    assert update_causes(gated, schedulingGates=None, nodeSelector={"flavor": "a", "block": "b1"}) == []
    assert update_causes(gated, nodeSelector={"flavor": "a", "block": "b1"}) == []
    only = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
    assert update_causes(gated, nodeSelector={"flavor": "b"}) == [
        (
            "FieldValueInvalid",
            f'Invalid value: map[string]string{{"flavor":"b"}}: {only}',
            "spec.nodeSelector",
        )
    ]
    assert update_causes(gated, nodeSelector=None)[0][2] == "spec.nodeSelector"
    # ungated, the nodeSelector is immutable
    ungated = {"nodeSelector": {"flavor": "a"}}
    [(reason, message, path)] = update_causes(ungated, nodeSelector={"flavor": "a", "block": "b1"})
    assert (reason, path) == ("FieldValueForbidden", "spec")
    assert "pod updates may not change fields" in message


def required_terms(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]
            }
        }
    }


ZONE = {"key": "zone", "operator": "In", "values": ["a"]}
RACK = {"key": "rack", "operator": "In", "values": ["r1"]}


def test_a_gated_pods_node_affinity_may_only_narrow() -> None:
    gates = {"schedulingGates": [{"name": "example.com/gate"}]}
    terms = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    narrowed = required_terms([ZONE, RACK])
    # an expression added to a term, with the gate lifted in the same update
    assert (
        update_causes({**gates, "affinity": required_terms([ZONE])}, schedulingGates=None, affinity=narrowed)
        == []
    )
    # none stored: anything may be set, preferred terms too
    preferred = {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}
    }
    assert update_causes(gates, affinity=narrowed) == []
    assert update_causes(gates, affinity=preferred) == []
    # an expression changed or dropped; a term added
    [(reason, message, path)] = update_causes(
        {**gates, "affinity": narrowed}, affinity=required_terms([RACK, ZONE])
    )
    assert (reason, path) == ("FieldValueInvalid", f"{terms}[0]")
    assert (
        message
        == "Invalid value: core.NodeSelectorTerm{...}: only additions are allowed (no mutations or deletions)"
    )
    [(_, message, path)] = update_causes(
        {**gates, "affinity": narrowed}, affinity=required_terms([ZONE, RACK], [ZONE])
    )
    assert (
        path == terms and "no additions/deletions to non-empty NodeSelectorTerms list are allowed" in message
    )
    # pod affinity is not a scheduling directive of a gated pod
    pod_affinity = {**narrowed, "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    [(reason, _, path)] = update_causes(gates, affinity=pod_affinity)
    assert (reason, path) == ("FieldValueForbidden", "spec")
    # ungated: immutable
    [(reason, _, path)] = update_causes({"affinity": required_terms([ZONE])}, affinity=narrowed)
    assert (reason, path) == ("FieldValueForbidden", "spec")


SUBDOMAIN = objectmeta.DNS1123_SUBDOMAIN_ERROR


def one(**container: Any) -> list[tuple[str, str, str]]:
    return spec_causes(containers=[{"name": "c", "image": "i", **container}])


def test_env_from_names_one_source_with_a_name_and_a_valid_prefix() -> None:
    assert (
        one(envFrom=[{"prefix": "CFG_", "configMapRef": {"name": "settings-"}}, {"secretRef": {"name": "s"}}])
        == []
    )
    assert one(
        envFrom=[
            {"prefix": "A=B", "configMapRef": {"name": "Bad"}},
            {},
            {"configMapRef": {}, "secretRef": {"name": "s"}},
        ]
    ) == [
        (
            "FieldValueInvalid",
            "spec.containers[0].envFrom[0].prefix",
            f'Invalid value: "A=B": {envvalidation.RELAXED_ENV_NAME}',
        ),
        (
            "FieldValueInvalid",
            "spec.containers[0].envFrom[0].configMapRef.name",
            f'Invalid value: "Bad": {SUBDOMAIN}',
        ),
        (
            "FieldValueInvalid",
            "spec.containers[0].envFrom",
            'Invalid value: "": must specify one of: `configMapRef` or `secretRef`',
        ),
        ("FieldValueRequired", "spec.containers[0].envFrom[2].configMapRef.name", "Required value"),
        (
            "FieldValueInvalid",
            "spec.containers[0].envFrom",
            'Invalid value: "": may not have more than one field specified at a time',
        ),
    ]


def test_key_selectors_need_a_subdomain_name_and_a_config_key() -> None:
    ok = {"name": "creds", "key": "token.v1"}
    assert (
        one(
            env=[
                {"name": "A", "valueFrom": {"secretKeyRef": ok}},
                {"name": "B", "valueFrom": {"configMapKeyRef": ok}},
            ]
        )
        == []
    )
    at = "spec.containers[0].env"
    assert one(
        env=[
            {"name": "A", "valueFrom": {"secretKeyRef": {"key": "a/b"}}},
            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm"}}},
            {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "..x"}}},
        ]
    ) == [
        ("FieldValueInvalid", f"{at}[0].valueFrom.secretKeyRef.name", f'Invalid value: "": {SUBDOMAIN}'),
        (
            "FieldValueInvalid",
            f"{at}[0].valueFrom.secretKeyRef.key",
            f'Invalid value: "a/b": {envvalidation.CONFIG_KEY}',
        ),
        ("FieldValueRequired", f"{at}[1].valueFrom.configMapKeyRef.key", "Required value"),
        (
            "FieldValueInvalid",
            f"{at}[2].valueFrom.configMapKeyRef.key",
            "Invalid value: \"..x\": must not start with '..'",
        ),
    ]


def test_resource_field_refs_name_a_container_resource_and_an_allowed_divisor() -> None:
    refs = [
        {"resource": "limits.cpu", "divisor": "1m"},
        {"resource": "requests.memory", "divisor": "1Mi"},
        {"resource": "limits.hugepages-2Mi"},
    ]
    assert (
        one(env=[{"name": f"R{i}", "valueFrom": {"resourceFieldRef": r}} for i, r in enumerate(refs)]) == []
    )
    at = "spec.containers[0].env"
    bad = [
        {"resource": "limits.gpu"},
        {"divisor": "1"},
        {"resource": "limits.cpu", "divisor": "2"},
        {"resource": "limits.memory", "divisor": "1024"},
    ]
    assert one(env=[{"name": f"R{i}", "valueFrom": {"resourceFieldRef": r}} for i, r in enumerate(bad)]) == [
        (
            "FieldValueNotSupported",
            f"{at}[0].valueFrom.resourceFieldRef.resource",
            'Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", '
            '"limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"',
        ),
        ("FieldValueRequired", f"{at}[1].valueFrom.resourceFieldRef.resource", "Required value"),
        (
            "FieldValueInvalid",
            f"{at}[2].valueFrom.resourceFieldRef.divisor",
            'Invalid value: "limits.cpu": '
            "only divisor's values 1m and 1 are supported with the cpu resource",
        ),
        (
            "FieldValueInvalid",
            f"{at}[3].valueFrom.resourceFieldRef.divisor",
            'Invalid value: "limits.memory": '
            "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, "
            "1Ti, 1Pi, 1Ei are supported with the memory resource",
        ),
    ]


def test_sub_paths_are_relative_and_descending() -> None:
    volumes = [{"name": "v", "emptyDir": {}}, {"name": "img", "image": {"reference": "r"}}]
    ok = [
        {"name": "v", "mountPath": "/a", "subPath": "data/x"},
        {"name": "v", "mountPath": "/b", "subPathExpr": "$(POD)/logs"},
    ]
    assert spec_causes(volumes=volumes, containers=[{"name": "c", "image": "i", "volumeMounts": ok}]) == []
    mounts = [
        {"name": "v", "mountPath": "/a", "subPath": "/abs/../x"},
        {"name": "v", "mountPath": "/b", "subPath": "a", "subPathExpr": "b"},
        {"name": "img", "mountPath": "/c", "subPath": "a"},
    ]
    at = "spec.containers[0].volumeMounts"
    assert spec_causes(volumes=volumes, containers=[{"name": "c", "image": "i", "volumeMounts": mounts}]) == [
        ("FieldValueInvalid", f"{at}.subPath", 'Invalid value: "/abs/../x": must be a relative path'),
        ("FieldValueInvalid", f"{at}.subPath", "Invalid value: \"/abs/../x\": must not contain '..'"),
        (
            "FieldValueInvalid",
            f"{at}[1].subPathExpr",
            'Invalid value: "b": subPathExpr and subPath are mutually exclusive',
        ),
        ("FieldValueInvalid", f"{at}[2].subPath", 'Invalid value: "a": not allowed in image volume sources'),
    ]


def test_host_ports_are_unique_across_containers_per_protocol() -> None:
    def port(host: int, protocol: str = "TCP") -> dict[str, Any]:
        return {"containerPort": 80, "hostPort": host, "protocol": protocol}

    pair = [
        {"name": "a", "image": "i", "ports": [port(8080)]},
        {"name": "b", "image": "i", "ports": [port(8080, "UDP")]},
    ]
    assert spec_causes(containers=pair) == []
    clash = [
        {"name": "a", "image": "i", "ports": [port(8080)]},
        {"name": "b", "image": "i", "ports": [port(8080)]},
    ]
    assert spec_causes(containers=clash) == [
        ("FieldValueDuplicate", "spec.containers[1].ports[0].hostPort", 'Duplicate value: "TCP//8080"')
    ]
    # init containers run one by one: one may reuse a regular container's host port
    assert (
        spec_causes(containers=clash[:1], initContainers=[{"name": "i", "image": "i", "ports": [port(8080)]}])
        == []
    )
