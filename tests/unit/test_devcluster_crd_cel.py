"""CRD `x-kubernetes-validations` rules as devcluster evaluates them (crds/celrules.py,
crds/celeval.py), over the rules kubetrain's Trainer CRDs and upstream's Trainer / JobSet CRDs ship
and those of the Kubernetes documentation's examples, with the causes kube-apiserver reports."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.kinds.crds import celeval, celrules

CRDS = Path(__file__).resolve().parents[2] / "charts" / "kubetrain" / "files" / "crds"


def obj_schema(
    props: dict[str, Any], rules: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


def root(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {"spec": spec, "metadata": {"type": "object"}}
    if status is not None:
        props["status"] = status
    return obj_schema(props)


def trainjob_schema() -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / "trainer.kubeflow.org_trainjobs.yaml").read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def trainjob(**trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "a", "namespace": "ns"},
        "spec": {"runtimeRef": {"name": "torch"}, "trainer": trainer},
    }


def test_kubetrains_trainjob_rule_refuses_zero_procs_per_node_with_its_message() -> None:
    compiled = celrules.compile_schema(trainjob_schema())
    assert compiled.skipped == []
    assert celeval.validate(compiled, trainjob(numProcPerNode=0), None) == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: 0: numProcPerNode must be greater than or equal to 1",
            "spec.trainer.numProcPerNode",
        )
    ]
    assert celeval.validate(compiled, trainjob(numProcPerNode=1), None) == []
    assert celeval.validate(compiled, trainjob(), None) == []  # absent: the rule has no value to run on


def test_update_ratchets_an_unchanged_failing_value_but_not_a_changed_one() -> None:
    """`CRDValidationRatcheting`: a value equal to the stored one is not re-judged."""
    compiled = celrules.compile_schema(trainjob_schema())
    old = trainjob(numProcPerNode=0)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"x": "y"}
    assert celeval.validate(compiled, new, old) == []
    new["spec"]["trainer"]["numProcPerNode"] = -1
    assert [c.field for c in celeval.validate(compiled, new, old)] == ["spec.trainer.numProcPerNode"]


JOBSET_IMMUTABLE = {"rule": "self == oldSelf", "message": "Value is immutable"}


def test_transition_rule_runs_only_on_update() -> None:
    """JobSet's `replicatedJobs` rule `self == oldSelf`: never on create, refused when changed."""
    schema = root(
        obj_schema(
            {
                "replicatedJobs": {
                    "type": "array",
                    "items": obj_schema({"name": {"type": "string"}, "replicas": {"type": "integer"}}),
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-validations": [JOBSET_IMMUTABLE],
                }
            }
        )
    )
    compiled = celrules.compile_schema(schema)
    old = {"metadata": {"name": "j"}, "spec": {"replicatedJobs": [{"name": "w", "replicas": 1}]}}
    assert celeval.validate(compiled, old, None) == []
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][0]["replicas"] = 2
    assert celeval.validate(compiled, new, old) == [
        Cause("FieldValueInvalid", "Invalid value: Value is immutable", "spec.replicatedJobs")
    ]
    assert celeval.validate(compiled, copy.deepcopy(old), old) == []


def test_list_rules_with_exists_and_all() -> None:
    """Trainer's containerNames rule (`!self.exists(...)`) and JobSet's volume-claim template rule
    (`self.templates.all(...)`)."""
    names = {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-validations": [
            {
                "rule": "!self.exists(c, c == 'node')",
                "message": "containerNames must not include the main node container because PET_* envs "
                "are always injected into it",
            }
        ],
    }
    templates = obj_schema(
        {
            "templates": {
                "type": "array",
                "items": obj_schema({"metadata": obj_schema({"namespace": {"type": "string"}})}),
            }
        },
        [
            {
                "rule": "self.templates.all(t, !has(t.metadata.namespace) "
                "|| size(t.metadata.namespace) == 0)",
                "message": "namespace cannot be set for VolumeClaimPolicies templates",
            }
        ],
    )
    compiled = celrules.compile_schema(root(obj_schema({"containerNames": names, "claims": templates})))
    ok = {"spec": {"containerNames": ["init"], "claims": {"templates": [{"metadata": {"namespace": ""}}]}}}
    assert celeval.validate(compiled, ok, None) == []
    bad = {
        "spec": {
            "containerNames": ["init", "node"],
            "claims": {"templates": [{"metadata": {"namespace": "x"}}]},
        }
    }
    assert celeval.validate(compiled, bad, None) == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: namespace cannot be set for VolumeClaimPolicies templates",
            "spec.claims",
        ),
        Cause(
            "FieldValueInvalid",
            "Invalid value: containerNames must not include the main node container because PET_* envs are "
            "always injected into it",
            "spec.containerNames",
        ),
    ]


SCALE_RULE = {
    "rule": "self.minReplicas <= self.replicas",
    "messageExpression": "'minReplicas (' + string(self.minReplicas) + ') must not exceed replicas'",
    "reason": "FieldValueForbidden",
    "fieldPath": ".minReplicas",
}


def scale_schema(rule: dict[str, Any]) -> dict[str, Any]:
    ints = {"type": "integer"}
    return root(obj_schema({"replicas": ints, "minReplicas": ints}, [rule]))


def test_message_expression_reason_and_field_path() -> None:
    """The Kubernetes documentation's example: messageExpression's text, reason Forbidden, the cause
    at the rule's fieldPath under the node."""
    compiled = celrules.compile_schema(scale_schema(SCALE_RULE))
    bad = {"spec": {"replicas": 1, "minReplicas": 3}}
    assert celeval.validate(compiled, bad, None) == [
        Cause(
            "FieldValueForbidden", "Forbidden: minReplicas (3) must not exceed replicas", "spec.minReplicas"
        )
    ]


def test_message_fallbacks_and_runtime_errors() -> None:
    """A messageExpression that fails falls back to `message`, then `failed rule: <rule>`; a rule
    that cannot evaluate (a missing key) is reported with `evaluating rule`."""
    failing = {**SCALE_RULE, "messageExpression": "self.nothing", "message": "min over max"}
    del failing["reason"], failing["fieldPath"]
    bad = {"spec": {"replicas": 1, "minReplicas": 3}}
    assert celeval.validate(celrules.compile_schema(scale_schema(failing)), bad, None) == [
        Cause("FieldValueInvalid", "Invalid value: min over max", "spec")
    ]
    plain = {"rule": "  self.minReplicas <= self.replicas "}
    assert celeval.validate(celrules.compile_schema(scale_schema(plain)), bad, None) == [
        Cause("FieldValueInvalid", "Invalid value: failed rule: self.minReplicas <= self.replicas", "spec")
    ]
    causes = celeval.validate(celrules.compile_schema(scale_schema(plain)), {"spec": {"replicas": 1}}, None)
    assert len(causes) == 1 and causes[0].field == "spec"
    assert causes[0].message.startswith('Invalid value: "object": ')
    assert causes[0].message.endswith(" evaluating rule: self.minReplicas <= self.replicas")


def test_rule_on_status() -> None:
    """Upstream Trainer's trainerStatus rule, checked on a status write."""
    status = obj_schema(
        {
            "trainerStatus": obj_schema(
                {"lastUpdatedTime": {"type": "string"}, "progressPercentage": {"type": "integer"}},
                [
                    {
                        "rule": "has(self.lastUpdatedTime)",
                        "message": "lastUpdatedTime is required when trainerStatus is present",
                    }
                ],
            )
        }
    )
    compiled = celrules.compile_schema(root(obj_schema({}), status))
    obj = {"spec": {}, "status": {"trainerStatus": {"progressPercentage": 5}}}
    assert celeval.validate(compiled, obj, {"spec": {}}) == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: lastUpdatedTime is required when trainerStatus is present",
            "status.trainerStatus",
        )
    ]


def test_root_rule_sees_only_name_and_generate_name_of_metadata() -> None:
    """Upstream Trainer's TrainJob name rules run on the root (`WithTypeAndObjectMeta`)."""
    schema = obj_schema(
        {"metadata": {"type": "object"}},
        [
            {
                "rule": "size(self.metadata.name) <= 63",
                "message": "metadata.name must be no more than 63 characters",
            },
            {"rule": "!has(self.metadata.labels)", "message": "labels are not visible to rules"},
        ],
    )
    compiled = celrules.compile_schema(schema)
    obj = {"metadata": {"name": "x" * 64, "labels": {"a": "b"}}}
    assert celeval.validate(compiled, obj, None) == [
        Cause("FieldValueInvalid", "Invalid value: metadata.name must be no more than 63 characters", "<nil>")
    ]  # the root's field: a nil field.Path's String()


def test_number_fields_are_doubles_and_int_or_string_converts() -> None:
    """Upstream Trainer's Optimizer search-space rules (`double(self.min) < double(self.max)`)."""
    schema = root(
        obj_schema(
            {"min": {"type": "string"}, "max": {"type": "string"}, "rate": {"type": "number"}},
            [
                {
                    "rule": "double(self.min) < double(self.max)",
                    "message": "min must be strictly less than max",
                },
                {"rule": "self.rate > 0.5", "message": "rate too low"},
            ],
        )
    )
    compiled = celrules.compile_schema(schema)
    assert celeval.validate(compiled, {"spec": {"min": "0.1", "max": "2", "rate": 1}}, None) == []
    assert [
        c.message for c in celeval.validate(compiled, {"spec": {"min": "3", "max": "2", "rate": 0}}, None)
    ] == [
        "Invalid value: min must be strictly less than max",
        "Invalid value: rate too low",
    ]


def test_unsupported_rules_are_skipped_and_named_not_refused() -> None:
    schema = root(
        obj_schema(
            {"items": {"type": "array", "items": {"type": "integer"}}, "q": {"type": "string"}},
            [
                {"rule": "self.q.substring(1) == ''"},
                {"rule": "self.q.charAt(0) == 'a'"},
                {"rule": "self.q.lowerAscii() == self.q", "message": "q must be lower case"},
                {"rule": "self.q.replace('a', 'b') == self.q"},
                {"rule": "self.q ==", "message": "does not parse"},
            ],
        )
    )
    compiled = celrules.compile_schema(schema)
    assert len(compiled.skipped) == 4
    assert "substring" in compiled.skipped[0] and compiled.skipped[0].startswith(".spec: ")
    assert "replace" in compiled.skipped[2]
    assert celeval.validate(compiled, {"spec": {"items": [2, 1], "q": "Ab"}}, None) == [
        Cause("FieldValueInvalid", "Invalid value: q must be lower case", "spec")
    ]


def test_a_blocking_schema_error_skips_the_rules() -> None:
    """`hasBlockingErr`: after a type/required/enum/too-long/too-many error the rules are not run."""
    compiled = celrules.compile_schema(trainjob_schema())
    blocking = [Cause("FieldValueTypeInvalid", "Invalid value: ...", "spec.x")]
    assert celeval.object_causes(compiled, trainjob(numProcPerNode=0), None, blocking) == [
        celeval.NOT_CHECKED
    ]
    minimum = [Cause("FieldValueInvalid", "Invalid value: ...", "spec.trainer.numNodes")]
    assert [c.field for c in celeval.object_causes(compiled, trainjob(numProcPerNode=0), None, minimum)] == [
        "spec.trainer.numProcPerNode"
    ]


def test_a_runtime_overload_error_on_int_or_string_is_worded_as_upstream() -> None:
    """int-or-string is dynamic in CEL: `self > 1` on a string fails at run time with the detail
    `validateExpressions` gives a "no such overload" error."""
    schema = root(
        obj_schema(
            {"port": {"x-kubernetes-int-or-string": True, "x-kubernetes-validations": [{"rule": "self > 1"}]}}
        )
    )
    compiled = celrules.compile_schema(schema)
    assert celeval.validate(compiled, {"spec": {"port": 2}}, None) == []
    assert celeval.validate(compiled, {"spec": {"port": "http"}}, None) == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, "
            "function or macro signature for rule: self > 1",
            "spec.port",
        )
    ]


def test_loading_the_evaluator_keeps_the_process_recursion_limit() -> None:
    """celpy raises the limit process-wide; the webhook's answer to a too-deep object relies on
    the default one (test_webhook_hostile.py)."""
    code = (
        "import sys; before = sys.getrecursionlimit(); "
        "import kubetrain.devcluster.apiserver.kinds.crds.celrules; "
        "print(before, sys.getrecursionlimit())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = out.split()
    assert before == after
