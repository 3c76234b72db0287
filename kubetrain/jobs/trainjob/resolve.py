"""A TrainJob and its runtime → the steps kubetrain runs: each replicated job of the runtime's
JobSet template with the TrainJob's patches and overrides applied, as Trainer 2.3 builds its
JobSet (pkg/runtime/framework/plugins/jobset and the ML policy plug-ins):

1. `spec.runtimePatches`, in order (`patches.apply_runtime_patches`);
2. the initializer steps (label `trainer.kubeflow.org/trainjob-ancestor-step` =
   `dataset-initializer` / `model-initializer`): one job; their container of the same name gets
   `STORAGE_URI`, the TrainJob's env and its secretRef as envFrom;
3. the trainer step (ancestor `trainer`): one job of `numNodes` pods (TrainJob's, else the
   runtime's `mlPolicy.numNodes`, else 1); its `node` container gets the TrainJob's image,
   command, args, resourcesPerNode and env; the ML policy's env (`frameworks.mlpolicies`) and
   port 29500 are the TrainJob's env plug-in (`mlenv.py`), added to each pod as it is built;
   a torchtune TrainJob's command is rewritten (`torchtune.py`).
4. the template's `volumeClaimPolicies`: the PVC volumes JobSet adds (`volumeclaims.py`).
Every pod's hostname, its name `<tj>-<step>-<jobIndex>-<index>`, must be a DNS label (≤ 63):
a TrainJob whose name makes one longer is a problem at `metadata.name`.

Pure; every problem a FieldError (paths in the TrainJob, or `runtime.` for the runtime)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.dnsnames import MAX_LABEL_LENGTH
from kubetrain.api.errors import QUOTE, FieldError, invalid, required
from kubetrain.api.trainer import constants as c
from kubetrain.api.trainer.jobset import JobSetSpec
from kubetrain.frameworks.mlpolicies import MLPolicyPlugin, Torch, TrainerFacts, plugin_for
from kubetrain.jobs import jobsuccess
from kubetrain.jobs.failuremodel import PER_INDEX_JOB_BACKOFF_LIMIT
from kubetrain.jobs.trainjob import (
    failurepolicy,
    flux,
    jobsetpolicy,
    mpi,
    podfailurepolicy,
    torchtune,
    volumeclaims,
)
from kubetrain.jobs.trainjob.mlenv import ContainerEnv, MLPolicyEnv
from kubetrain.jobs.trainjob.model import ResolvedTrainJob, Step
from kubetrain.jobs.trainjob.patches import (
    apply_runtime_patches,
    merge_resources,
    runtime_resources,
    trainer_node_containers,
    upsert_env,
)

Obj = dict[str, Any]
DEFAULT_BACKOFF_LIMIT = 6  # batch/v1 Job's
# JobSet's success policy field, by the model's wire name.
SUCCESS_POLICY = JobSetSpec.model_fields["success_policy"].alias or ""


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def resolve(
    trainjob: Mapping[str, Any], runtime: Mapping[str, Any], *, cluster_domain: ClusterDomain = UNSET
) -> tuple[ResolvedTrainJob | None, list[FieldError]]:
    """The steps of `trainjob` run with `runtime` (a TrainingRuntime/ClusterTrainingRuntime dict);
    `cluster_domain`: the operator's (the Flux brokers' fully qualified names carry it)."""
    meta = trainjob.get("metadata") or {}
    spec = trainjob.get("spec") or {}
    rspec = runtime.get("spec") or {}
    ml_policy = rspec.get("mlPolicy") or {}
    errors: list[FieldError] = []
    template = copy.deepcopy(dict(rspec.get("template") or {}))
    jsspec = template.setdefault("spec", {})
    if not jsspec.get("replicatedJobs"):
        errors.append(
            required("runtime.spec.template.spec.replicatedJobs", "the runtime has no replicated jobs")
        )
    errors += apply_runtime_patches(template, spec.get("runtimePatches") or [], "spec.runtimePatches")
    trainer = spec.get("trainer") or {}
    num_nodes = _int(trainer.get("numNodes"), _int(ml_policy.get("numNodes"), 0))
    plugin = plugin_for(ml_policy)
    network = jsspec.get("network") or {}
    subdomain = str(network.get("subdomain") or meta.get("name", ""))  # JobSet's GetSubdomain
    steps: list[Step] = []
    env: list[ContainerEnv] = []  # the ML policy's, added to each new pod (mlenv.py)
    trainer_found = False
    facts: TrainerFacts | None = None  # what the ML policy reads of the trainer step (`_trainer`)
    for rjob in jsspec.get("replicatedJobs") or []:
        jt = rjob.get("template") or {}
        jmeta = jt.get("metadata") or {}
        ancestor = str((jmeta.get("labels") or {}).get(c.LABEL_ANCESTOR, ""))
        jspec = jt.get("spec") or {}
        pod_template = copy.deepcopy(dict(jspec.get("template") or {}))
        # Trainer's newRuntimeInfo: a step's pods are its parallelism (default 1), which
        # syncParallelCount also writes as the Job's completions (the trainer's: numNodes)
        pods = _int(jspec.get("parallelism"), 1)
        replicas = _int(rjob.get("replicas"), 1)
        if ancestor in (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER):
            replicas = 1
            _initializer(pod_template, ancestor, spec.get("initializer") or {})
        if ancestor == c.ANCESTOR_TRAINER:
            trainer_found = True
            replicas = 1
            if num_nodes == 0:
                num_nodes = _int(jspec.get("parallelism"), 1)
            if ml_policy.get("mpi") is None:  # MPI: the trainer step is the launcher
                pods = num_nodes
            problems, added, facts = _trainer(
                pod_template,
                str(meta.get("name", "")),
                subdomain,
                trainer,
                num_nodes,
                plugin,
                str(rjob.get("name", "")),
            )
            if facts is not None and facts.torchtune:
                problems += _torchtune(pod_template, facts, spec, jsspec)
            errors += problems
            env += added
        depends = tuple(
            (str(d.get("name", "")), str(d.get("status", "")))
            for d in (rjob.get("dependsOn") or [])
            if isinstance(d, Mapping)
        )
        steps.append(
            Step(
                name=str(rjob.get("name", "")),
                ancestor=ancestor,
                group_name=str(rjob.get("groupName") or "default"),
                replicas=replicas,
                pods=pods,
                backoff_limit=_int(jspec.get("backoffLimit"), _default_backoff_limit(jspec)),
                job_metadata=jmeta,
                pod_template=pod_template,
                depends_on=depends,
                pod_failure_rules=podfailurepolicy.rules_of(jspec),
                active_deadline_seconds=_deadline(jspec.get("activeDeadlineSeconds")),
                backoff_limit_per_index=_deadline(jspec.get("backoffLimitPerIndex")),
                max_failed_indexes=_deadline(jspec.get("maxFailedIndexes")),
                success_rules=jobsuccess.rules_of(jspec),
            )
        )
    if not trainer_found and jsspec.get("replicatedJobs"):
        errors.append(
            required(
                "runtime.spec.template.spec.replicatedJobs",
                f"no replicated job is labelled {c.LABEL_ANCESTOR}: {c.ANCESTOR_TRAINER}",
            )
        )
    extra: tuple[dict[str, Any], ...] = ()
    if ml_policy.get("mpi") is not None and not errors:
        mpi_policy = mpi.policy(ml_policy["mpi"], trainer, num_nodes, runtime_resources(jsspec))
        steps = [replace(s, pods=mpi_policy.node_count) if s.name == c.NODE else s for s in steps]
        errors += mpi.enforce(steps, mpi_policy)
        extra = mpi.children(str(meta.get("name", "")), subdomain, steps, mpi_policy)
    if ml_policy.get("flux") is not None and not errors:
        problems, extra = _flux(steps, meta, ml_policy["flux"], trainer, num_nodes, jsspec, cluster_domain)
        errors += problems
    errors += _hostname_errors(str(meta.get("name", "")), steps)
    if isinstance(plugin, Torch):
        facts = facts or TrainerFacts(
            str(meta.get("name", "")), num_nodes, trainer.get("numProcPerNode"), {}, subdomain=subdomain
        )
        problems, added = _inject_env(steps, plugin, facts, ml_policy)
        errors += problems
        env += added
    endpoint, coordinator_errors = jobsetpolicy.coordinator(
        jsspec, str(meta.get("name", "")), subdomain, steps
    )
    errors += coordinator_errors
    claims, claim_errors = volumeclaims.resolve(
        jsspec, str(meta.get("name", "")), [s.pod_template for s in steps]
    )
    errors += claim_errors
    errors += failurepolicy.validate(jsspec, "runtime.spec.template.spec")  # JobSet's webhook rule
    errors += jobsetpolicy.managed_by_errors(jsspec, "runtime.spec.template.spec")
    success = jsspec.get(SUCCESS_POLICY) or {}
    failure = jsspec.get("failurePolicy") or {}
    resolved = ResolvedTrainJob(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        uid=str(meta.get("uid", "")),
        steps=tuple(steps),
        num_nodes=max(num_nodes, 1),
        subdomain=subdomain,
        publish_not_ready_addresses=network.get("publishNotReadyAddresses") is not False,
        dns_hostnames=network.get("enableDNSHostnames") is not False,
        success_operator=str(success.get("operator") or "All"),
        success_targets=tuple(success.get("targetReplicatedJobs") or ()),
        max_restarts=_int(failure.get("maxRestarts"), 0),
        policy=plugin.name
        if plugin
        else next((k for k in ("mpi", "flux") if ml_policy.get(k) is not None), ""),
        pod_group_policy=rspec.get("podGroupPolicy") or {},
        extra=extra,
        ttl_set=jsspec.get("ttlSecondsAfterFinished") is not None,
        failure_policy=failure if jsspec.get("failurePolicy") is not None else None,
        in_order=jobsetpolicy.in_order(jsspec),
        blocking_recreate=jobsetpolicy.blocking_recreate(jsspec),
        coordinator=endpoint,
        env=MLPolicyEnv(tuple(env)),
        claims=claims,
        jobset_annotations=dict((template.get("metadata") or {}).get("annotations") or {}),
    )
    return (None if errors else resolved), errors


def _hostname_errors(name: str, steps: list[Step]) -> list[FieldError]:
    """Each pod's hostname is its name `<tj>-<step>-<jobIndex>-<index>`, which the API server
    holds to a DNS-1123 label of at most 63 characters (ValidatePodSpec on `spec.hostname`): a
    longer one would have every create of that pod refused. JobSet's webhook refuses such a
    JobSet (`podNameTooLongErrorMsg`), so under Trainer it never runs either."""
    longest = [
        f"{name}-{s.name}-{s.replicas - 1}-{s.pods - 1}" for s in steps if s.replicas > 0 and s.pods > 0
    ]
    over = [h for h in longest if len(h) > MAX_LABEL_LENGTH]
    if not name or not over:
        return []
    room = MAX_LABEL_LENGTH - max(len(h) - len(name) for h in longest)
    message = (
        f"must be no more than {room} characters for this runtime and numNodes: the pod hostname "
        f"{QUOTE.encode(over[0])} ({len(over[0])} characters) must be a DNS label of at most "
        f"{MAX_LABEL_LENGTH} characters"
    )
    return [invalid("metadata.name", message)]


def _containers(pod_template: Obj) -> list[Obj]:
    return [x for x in (pod_template.setdefault("spec", {}).get("containers") or []) if isinstance(x, dict)]


def _initializer(pod_template: Obj, ancestor: str, initializer: Mapping[str, Any]) -> None:
    source = initializer.get("dataset" if ancestor == c.DATASET_INITIALIZER else "model")
    if not isinstance(source, Mapping):
        return
    for container in _containers(pod_template):
        if container.get("name") != ancestor:
            continue
        if source.get("storageUri") is not None:
            upsert_env(container, [{"name": c.INITIALIZER_ENV_STORAGE_URI, "value": source["storageUri"]}])
        upsert_env(container, source.get("env") or [])
        secret = (source.get("secretRef") or {}).get("name")
        if secret:
            container["envFrom"] = [*(container.get("envFrom") or []), {"secretRef": {"name": secret}}]


def _trainer(
    pod_template: Obj,
    name: str,
    subdomain: str,
    trainer: Mapping[str, Any],
    num_nodes: int,
    plugin: MLPolicyPlugin | None,
    step: str,
) -> tuple[list[FieldError], list[ContainerEnv], TrainerFacts | None]:
    """The TrainJob's trainer overrides written into the `node` container of the trainer step
    `step`; the ML policy's env and port for it (added to each pod), and what the policy read
    (None without a policy or a `node` container)."""
    node = next((x for x in _containers(pod_template) if x.get("name") == c.NODE), None)
    if node is None:
        problem = required(
            "runtime.spec.template.spec.replicatedJobs",
            f"the trainer step has no container named {QUOTE.encode(c.NODE)}",
        )
        return [problem], [], None
    for key in ("image", "command", "args"):
        if trainer.get(key) is not None:
            node[key] = copy.deepcopy(trainer[key])
    # The container gets resourcesPerNode merged over the runtime's resources, and the ML policy
    # counts GPUs and CPUs in what it gets (`patches.counted_resources`).
    per_node = trainer.get("resourcesPerNode")
    if per_node is not None:
        node["resources"] = merge_resources(node.get("resources"), copy.deepcopy(per_node))
    resources = copy.deepcopy(node.get("resources") or {})
    upsert_env(node, trainer.get("env") or [])
    if plugin is None:
        return [], [], None
    facts = TrainerFacts(
        name=name,
        num_nodes=num_nodes,
        num_proc_per_node=trainer.get("numProcPerNode"),
        resources=resources,
        torchtune=isinstance(plugin, Torch) and torchtune.is_torchtune(trainer),
        subdomain=subdomain,
    )
    return [], [ContainerEnv(step, c.NODE, tuple(plugin.trainer_env(facts)), plugin.port())], facts


def _torchtune(
    pod_template: Obj, facts: TrainerFacts, spec: Mapping[str, Any], jsspec: Mapping[str, Any]
) -> list[FieldError]:
    """A torchtune TrainJob (`facts.torchtune`): Trainer's torchtune rules, and the trainer
    step's `node` command rewritten (`torchtune.py`)."""
    trainer = spec.get("trainer") or {}
    node = next(x for x in _containers(pod_template) if x.get("name") == c.NODE)  # `_trainer` found it
    ref = str((spec.get("runtimeRef") or {}).get("name") or "")
    torchtune.rewrite(node, facts, [str(a) for a in trainer.get("args") or []], ref, jsspec)
    return torchtune.validate(trainer, ref, facts.resources)


def _flux(
    steps: list[Step],
    meta: Mapping[str, Any],
    policy: Mapping[str, Any],
    trainer: Mapping[str, Any],
    num_nodes: int,
    jsspec: Mapping[str, Any],
    cluster_domain: ClusterDomain,
) -> tuple[list[FieldError], tuple[dict[str, Any], ...]]:
    """A Flux runtime (`flux.py`): Trainer's rules, the `node` step wrapped in Flux, its
    ConfigMap and Secret."""
    step = next((s for s in steps if s.name == c.NODE), None)
    containers = ((step.pod_template.get("spec") or {}).get("containers") or []) if step else []
    node = next((x for x in containers if isinstance(x, Mapping) and x.get("name") == c.NODE), None)
    if step is None or node is None:
        path = "runtime.spec.template.spec.replicatedJobs"
        return [
            required(
                path,
                f"a replicated job {QUOTE.encode(c.NODE)} with a container {QUOTE.encode(c.NODE)} (Flux runs "
                "it)",
            )
        ], ()
    errors = flux.validate(str(meta.get("name", "")), policy, trainer, step.pod_template)
    if errors:
        return errors, ()
    runtime_node = next(iter(trainer_node_containers(jsspec, by_name=True)), {})
    subdomain = str((jsspec.get("network") or {}).get("subdomain") or "")
    facts = flux.read_policy(
        meta, policy, trainer, num_nodes, runtime_node, runtime_resources(jsspec), cluster_domain, subdomain
    )
    flux.enforce(steps, facts, trainer, runtime_node.get("args"))
    return [], flux.children(facts)


def _inject_env(
    steps: list[Step], torch: Torch, facts: TrainerFacts, ml_policy: Mapping[str, Any]
) -> tuple[list[FieldError], list[ContainerEnv]]:
    """torch.envInjection: the PET_* and master variables, as the trainer's `node` container's
    (`facts`), for named containers (or init containers) of the steps too."""
    errors: list[FieldError] = []
    added: list[ContainerEnv] = []
    targets = ((ml_policy.get("torch") or {}).get("envInjection") or {}).get("targets") or []
    by_name = {s.name: s for s in steps}
    for i, target in enumerate(targets):
        step = by_name.get(target.get("jobName"))
        for j, cname in enumerate(target.get("containerNames") or []):
            pod_spec = step.pod_template.get("spec", {}) if step else {}
            containers = [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
            container = next((x for x in containers if isinstance(x, dict) and x.get("name") == cname), None)
            if container is None:
                errors.append(
                    invalid(
                        f"runtime.spec.mlPolicy.torch.envInjection.targets[{i}].containerNames[{j}]",
                        f"no container {QUOTE.encode(cname)} in replicated job "
                        f"{QUOTE.encode(target.get('jobName'))}",
                    )
                )
                continue
            env = (*torch.pet_env(facts), *torch.master_env(facts))
            added.append(ContainerEnv(str(target.get("jobName")), cname, env))
    return errors, added


def _default_backoff_limit(jspec: Mapping[str, Any]) -> int:
    """batch/v1's default backoffLimit (SetDefaults_Job): MaxInt32 with backoffLimitPerIndex, else 6."""
    if _deadline(jspec.get("backoffLimitPerIndex")) is not None:
        return PER_INDEX_JOB_BACKOFF_LIMIT
    return DEFAULT_BACKOFF_LIMIT


def _deadline(value: Any) -> int | None:
    """A Job's non-negative integer field (`activeDeadlineSeconds`, `backoffLimitPerIndex`,
    `maxFailedIndexes`: ≥ 0, as batch/v1 admits them), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
