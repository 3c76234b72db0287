"""The job shape (kubetrain.jobs.shape) the v1 kinds produce: what the planner reads of a job."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from kubetrain.frameworks.env import ReplicaCounts
from kubetrain.frameworks.registry import FRAMEWORKS
from kubetrain.jobs.shape import COMPLETE, READY, DependsOn, JobShape
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.plan import Reconcile
from kubetrain.operator.prepare import PreparedJob, prepare_job
from tests.unit.planner_builders import at, job, pod, replica


def shape_of(obj: dict) -> JobShape:
    prepared = prepare_job(obj)
    assert prepared.errors == []
    assert prepared.shape is not None
    return prepared.shape


@pytest.mark.parametrize("kind", sorted(FRAMEWORKS))
def test_every_v1_kind_produces_one_group_per_replica_type_in_priority_order(kind: str) -> None:
    framework = FRAMEWORKS[kind]
    # The types given in reverse priority order: the shape lists them in the framework's order.
    types = [
        t
        for t in reversed(framework.replica_types)
        if t in ("Master", "Launcher", "Worker", "Scheduler", "Server")
    ]
    obj = job(kind, {t: replica(kind, 1) for t in types}, name="shape")
    shape = shape_of(obj)
    assert list(shape.groups) == [t for t in framework.replica_types if t in types]
    for name, group in shape.groups.items():
        assert group.name == name
        assert group.path == f"spec.{framework.replica_field}[{name}]"
        assert group.replicas == shape.layout.count(name)
        assert group.restart_policy == shape.layout.replicas[name].restart_policy
    assert shape.total_replicas == shape.layout.total_replicas
    assert shape.slots()[0] == (next(iter(shape.groups)), 0)
    assert (shape.kind, shape.name, shape.namespace) == (kind, "shape", "ns")


def test_run_policy_is_typed_and_defaulted() -> None:
    obj = job(
        "TFJob",
        {"Worker": replica("TFJob", 2)},
        run_policy={
            "backoffLimit": 3,
            "activeDeadlineSeconds": 600,
            "ttlSecondsAfterFinished": 60,
            "schedulingPolicy": {"minAvailable": 2, "queue": "q", "minResources": {"cpu": 4}},
            "podFailurePolicy": {
                "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]
            },
        },
    )
    policy = shape_of(obj).run_policy
    assert policy.clean_pod_policy == "Running"  # the default (docs/behaviour.md §2)
    assert policy.suspend is False
    assert (policy.backoff_limit, policy.active_deadline_seconds, policy.ttl_seconds_after_finished) == (
        3,
        600,
        60,
    )
    assert policy.scheduling.min_available == 2
    assert policy.scheduling.queue == "q"
    assert dict(policy.scheduling.min_resources or {}) == {"cpu": "4"}
    assert [r["action"] for r in policy.failure_rules] == ["FailJob"]
    assert policy.progress_deadline_seconds is None


def test_the_progress_deadline_comes_from_run_policy_else_the_annotation() -> None:
    from kubetrain.api.trainerstatus import ANNOTATION_DEADLINE

    obj = job("TFJob", {"Worker": replica("TFJob", 1)}, run_policy={"progressDeadlineSeconds": 60})
    assert shape_of(obj).run_policy.progress_deadline_seconds == 60
    annotated = job("TFJob", {"Worker": replica("TFJob", 1)})
    annotated["metadata"]["annotations"] = {ANNOTATION_DEADLINE: "90"}
    assert shape_of(annotated).run_policy.progress_deadline_seconds == 90


def test_run_policy_unset_fields_are_none() -> None:
    policy = shape_of(job("PyTorchJob", {"Master": replica("PyTorchJob", 1)})).run_policy
    assert policy.backoff_limit is None
    assert policy.active_deadline_seconds is None
    assert policy.ttl_seconds_after_finished is None
    assert policy.scheduling.min_available is None
    assert policy.scheduling.min_resources is None
    assert policy.failure_rules == ()


def test_mpi_wait_for_workers_ready_is_a_ready_dependency() -> None:
    specs = {"Launcher": replica("MPIJob", 1), "Worker": replica("MPIJob", 2)}
    waiting = shape_of(job("MPIJob", specs, launcherCreationPolicy="WaitForWorkersReady"))
    assert waiting.groups["Launcher"].depends_on == (DependsOn("Worker", READY),)
    assert waiting.groups["Worker"].depends_on == ()
    at_start = shape_of(job("MPIJob", specs))
    assert at_start.groups["Launcher"].depends_on == ()
    assert READY != COMPLETE


def test_rules_are_the_frameworks_success_rule() -> None:
    shape = shape_of(
        job("PyTorchJob", {"Master": replica("PyTorchJob", 1), "Worker": replica("PyTorchJob", 2)})
    )
    done = {
        "Master": ReplicaCounts(succeeded=1, succeeded_indices=frozenset({0})),
        "Worker": ReplicaCounts(active=2),
    }
    running = {"Master": ReplicaCounts(active=1), "Worker": ReplicaCounts(active=2)}
    assert shape.succeeded(done) is True  # PyTorch: the Master succeeded
    assert shape.succeeded(running) is False
    assert shape.failed(running) is None


def test_an_invalid_job_has_no_shape() -> None:
    prepared = prepare_job(job("TFJob", {"Bogus": replica("TFJob", 1)}))
    assert prepared.errors
    assert prepared.shape is None


def launcher_created(prepared: PreparedJob, obj: dict, worker_phase: str) -> bool:
    """Whether one reconcile creates the Launcher while both Workers are in `worker_phase`
    (Running ones Ready)."""
    ready = [{"type": "Ready", "status": "True"}] if worker_phase == "Running" else None
    exit_code = 0 if worker_phase == "Succeeded" else None
    pods = [pod(obj, "Worker", i, worker_phase, conditions=ready, exit_code=exit_code) for i in (0, 1)]
    result = Reconcile(obj, prepared, Observed(pods=pods), at(0), PlannerConfig()).run()
    return "pi-launcher-0" in [p["metadata"]["name"] for p in result.create_pods]


def test_the_planner_honours_ready_and_complete_dependencies() -> None:
    specs = {"Launcher": replica("MPIJob", 1), "Worker": replica("MPIJob", 2)}
    obj = job("MPIJob", specs, name="pi", launcherCreationPolicy="WaitForWorkersReady")
    prepared = prepare_job(obj)
    assert prepared.shape is not None
    assert launcher_created(prepared, obj, "Pending") is False
    assert launcher_created(prepared, obj, "Running") is True  # Ready
    # The same job read as a shape whose Launcher waits for the Workers to complete (a
    # TrainJob's `dependsOn: Complete`): Ready Workers are not enough, Succeeded ones are.
    shape = prepared.shape
    launcher = replace(shape.groups["Launcher"], depends_on=(DependsOn("Worker", COMPLETE),))
    complete = replace(prepared, shape=replace(shape, groups={**shape.groups, "Launcher": launcher}))
    assert launcher_created(complete, obj, "Running") is False
    assert launcher_created(complete, obj, "Succeeded") is True


def test_a_group_waiting_for_a_group_with_pods_is_left_out_of_the_gang() -> None:
    specs = {"Launcher": replica("MPIJob", 1), "Worker": replica("MPIJob", 3)}
    waiting = shape_of(job("MPIJob", specs, launcherCreationPolicy="WaitForWorkersReady"))
    assert waiting.gang_slots() == [("Worker", 0), ("Worker", 1), ("Worker", 2)]
    at_start = shape_of(job("MPIJob", specs))
    assert at_start.gang_slots() == at_start.slots()


# The planner's parts: they read a job only through its JobShape (docs/architecture.md, "Job
# shapes"). `runpolicy.is_managed` reads managedBy from the stored job before it is prepared.
PLANNER = (
    "plan",
    "active",
    "gates",
    "slots",
    "gang",
    "desired",
    "children",
    "jobchildren",
    "restarts",
    "runpolicy",
    "status",
    "draft",
    "pods",
    "creates",
    "statusprojection",
    "groupfailure",
    "groupactive",
    "groupsetup",
    "jobrestarts",
    "stall",
    "progressenv",
    # TrainJob's edge: it resolves the runtime snapshot into a shape and hands it to the planner.
    "trainedge",
)
EXEMPT = {("runpolicy", "run_policy"), ("runpolicy", "is_managed")}
SPEC_FIELDS = {"runPolicy", "schedulingPolicy", "podFailurePolicy", "replicaSpecs"}
# A TrainJob's spec and runtime fields, and the resolved runtime's policies (jobs/trainjob/model.py):
# the planner reads them as the shape's groups, run policy, failure model and scheduling policy.
SPEC_FIELDS |= {
    "replicatedJobs",
    "failurePolicy",
    "successPolicy",
    "startupPolicy",
    "podGroupPolicy",
    "mlPolicy",
    "backoffLimit",
    "dependsOn",
    "managedBy",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
}
# The resolved TrainJob's policies (jobs/trainjob/model.py), read on `resolved` or a `step`.
RESOLVED_POLICIES = {
    "failure_policy",
    "backoff_limit",
    "max_restarts",
    "in_order",
    "blocking_recreate",
    "pod_group_policy",
    "success_operator",
    "success_targets",
    "depends_on",
}


def spec_reads(module: str, source: str | None = None) -> list[str]:
    """Places where a planner module (its file, or `source`) reads the job's spec instead of
    its shape."""
    path = Path(__file__).parents[2] / "kubetrain" / "operator" / f"{module}.py"
    tree = ast.parse(source if source is not None else path.read_text())
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if (module, name) in EXEMPT:
                continue
            bad = None
            if isinstance(child, ast.Attribute) and child.attr in ("replica_field", "defaulted"):
                bad = child.attr
            elif (
                (
                    isinstance(child, ast.Attribute)
                    and child.attr in RESOLVED_POLICIES
                    and ast.unparse(child.value).split(".")[-1] in ("resolved", "step")
                )
                or (isinstance(child, ast.Attribute) and child.attr == "spec")
                or (
                    isinstance(child, ast.Call)
                    and isinstance(child.func, ast.Attribute)
                    and child.func.attr == "get"
                    and child.args
                    and isinstance(child.args[0], ast.Constant)
                    and child.args[0].value == "spec"
                    and ast.unparse(child.func.value).endswith("job")
                )
            ):
                bad = ast.unparse(child)
            elif isinstance(child, ast.Constant) and (
                child.value in SPEC_FIELDS or str(child.value).endswith("ReplicaSpecs")
            ):
                bad = repr(child.value)
            if bad is not None:
                found.append(f"operator/{module}.py:{getattr(child, 'lineno', 0)}: {bad}")
            visit(child, name)

    visit(tree, "")
    return found


def test_the_planner_reads_jobs_only_through_their_shape() -> None:
    assert [place for module in PLANNER for place in spec_reads(module)] == []


def test_the_spec_read_guard_sees_spec_reads() -> None:
    source = (
        "def f(layout, fw, prepared):\n"
        "    a = layout.spec.get('runPolicy')\n"
        "    b = fw.replica_field\n"
        "    return prepared.defaulted, {'tfReplicaSpecs': 1}\n"
        "def is_managed(job):\n"
        "    return job.spec\n"
        "def g(r):\n"
        "    return r.job.get('spec')\n"
    )
    found = spec_reads("active", source)
    assert found == [
        "operator/active.py:2: layout.spec",
        "operator/active.py:2: 'runPolicy'",
        "operator/active.py:3: replica_field",
        "operator/active.py:4: defaulted",
        "operator/active.py:4: 'tfReplicaSpecs'",
        "operator/active.py:6: job.spec",
        "operator/active.py:8: r.job.get('spec')",
    ]
    # TrainJob's spec, its runtime's fields and the resolved runtime's policies.
    trainjob_source = (
        "def g(d, resolved, step, runtime):\n"
        "    a = d.spec.get('managedBy')\n"
        "    b = runtime['spec']['template']['spec']['failurePolicy']\n"
        "    return resolved.in_order, step.backoff_limit, resolved.steps\n"
    )
    assert spec_reads("trainedge", trainjob_source) == [
        "operator/trainedge.py:2: d.spec",
        "operator/trainedge.py:2: 'managedBy'",
        "operator/trainedge.py:3: 'failurePolicy'",
        "operator/trainedge.py:4: resolved.in_order",
        "operator/trainedge.py:4: step.backoff_limit",
    ]
    # In runpolicy.py, is_managed may read the stored job's spec.
    assert "operator/runpolicy.py:6: job.spec" not in spec_reads("runpolicy", source)
    assert "operator/runpolicy.py:4: 'tfReplicaSpecs'" in spec_reads("runpolicy", source)


def test_one_creation_decision_for_every_shape() -> None:
    from kubetrain.operator.creates import missing_slots

    specs = {"Launcher": replica("MPIJob", 1), "Worker": replica("MPIJob", 3)}
    obj = job("MPIJob", specs, launcherCreationPolicy="WaitForWorkersReady")
    shape = shape_of(obj)
    held_worker = pod(obj, "Worker", 1, deleting=True)
    # a held slot (any attempt, terminating or not) is not missing; the Launcher waits for Workers
    assert missing_slots(shape, {}, {("Worker", 1): held_worker}, 10) == [("Worker", 0), ("Worker", 2)]
    assert missing_slots(shape, {}, {}, 2) == [("Worker", 0), ("Worker", 1)]  # at most `room`
    is_ready = [{"type": "Ready", "status": "True"}]
    ready = {("Worker", i): pod(obj, "Worker", i, conditions=is_ready) for i in range(3)}
    assert missing_slots(shape, ready, ready, 10) == [("Launcher", 0)]


# The TrainJob's edge: the one operator module that knows the TrainJob's own code (its runtime,
# snapshot and producer); every planner module reads the TrainJob through its shape.
EDGE = "trainedge"
OPERATOR = Path(__file__).parents[2] / "kubetrain" / "operator"


def imports_of(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def trainjob_imports(source: str) -> list[str]:
    return sorted(m for m in imports_of(source) if m.startswith("kubetrain.jobs.trainjob"))


def test_no_operator_module_but_the_edge_imports_the_trainjobs_own_code() -> None:
    found = {
        path.stem: trainjob_imports(path.read_text())
        for path in sorted(OPERATOR.glob("*.py"))
        if path.stem != EDGE
    }
    assert {module: names for module, names in found.items() if names} == {}
    assert trainjob_imports((OPERATOR / f"{EDGE}.py").read_text())  # the edge does


def test_the_trainjob_import_guard_sees_imports() -> None:
    source = "from kubetrain.jobs import trainjob\nimport kubetrain.jobs.trainjob.children as ch\n"
    assert trainjob_imports(source) == ["kubetrain.jobs.trainjob", "kubetrain.jobs.trainjob.children"]
    assert trainjob_imports("from kubetrain.jobs.shape import JobShape\n") == []


def test_one_planner_plans_every_shape() -> None:
    """The TrainJob is planned by the frame and active part every job goes through: its edge
    runs `plan.Reconcile`, and no planner module names a kind."""
    from kubetrain.operator import plan as plan_module
    from kubetrain.operator import trainedge

    assert trainedge.Reconcile is plan_module.Reconcile
    kinds = {*FRAMEWORKS, "TrainJob", "JobSet"}
    named = [
        f"operator/{module}.py:{node.lineno}: {node.value!r}"
        for module in PLANNER
        if module != EDGE
        for node in ast.walk(ast.parse((OPERATOR / f"{module}.py").read_text()))
        if isinstance(node, ast.Constant) and node.value in kinds
    ]
    assert named == []
