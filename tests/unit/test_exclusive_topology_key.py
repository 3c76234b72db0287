"""A TrainingRuntime whose exclusive-placement topology key is no label key: kube-apiserver
refuses a pod affinity term with an empty topologyKey or one that is no qualified name
(pkg/apis/core/validation `validatePodAffinityTerm`); JobSet admits the annotation and its
leader pods are then refused. kubetrain admits the runtime with a warning naming the value."""

from __future__ import annotations

import json

import pytest
from trainjobs import trainer_test_runtime

from kubetrain.jobs.trainjob.runtimerules import runtime_warnings

KEY = "alpha.jobset.sigs.k8s.io/exclusive-topology"


@pytest.mark.parametrize("bad", ["", "rack!", "a/b/c", "x" * 64])
def test_a_topology_key_that_is_no_label_key_is_a_warning(bad: str) -> None:
    runtime = trainer_test_runtime("labelled")
    template = runtime["spec"]["template"]
    template["metadata"] = {"annotations": {KEY: bad}}
    warnings = runtime_warnings(runtime)
    assert len(warnings) == len(template["spec"]["replicatedJobs"])
    assert warnings[0].startswith(
        f"spec.template.spec.replicatedJobs[0].template: the {KEY} value {json.dumps(bad)} "
        "is not a node label key ("
    )
    assert warnings[0].endswith(
        "the API server refuses the leader pods, whose pod affinity uses it as topologyKey"
    )


def test_a_label_key_or_the_node_selector_strategy_is_not_warned_about() -> None:
    runtime = trainer_test_runtime("labelled")
    template = runtime["spec"]["template"]
    template["metadata"] = {"annotations": {KEY: "cloud.google.com/gke-nodepool"}}
    assert runtime_warnings(runtime) == []
    # Under the node-selector strategy the key is written into no pod.
    template["metadata"] = {"annotations": {KEY: "rack!", "alpha.jobset.sigs.k8s.io/node-selector": "true"}}
    assert runtime_warnings(runtime) == []
