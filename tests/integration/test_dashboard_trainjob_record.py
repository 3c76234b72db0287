"""A dashboard started after a TrainJob's pods are gone still shows its restarts: the real
operator restarts a TrainJob as a whole, then fails it (`ReachedMaxRestarts`) and deletes its
pods; a dashboard whose informers start only then reads the restart from the TrainJob's runtime
snapshot ConfigMap (the run's record), its pods having nothing left to tell."""

from __future__ import annotations

import pytest

from kubetrain.dashboard.views.kinds import TRAINJOB, served_kinds
from kubetrain.dashboard.watch import JobWatch
from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import TRAINING_RUNTIMES, TRAINJOBS

from .controller_support import TRAINER_API_GROUPS, Harness, eventually
from .test_trainjob_controller import strict_runtime, trainjob, wait_condition

pytestmark = pytest.mark.asyncio(loop_scope="module")


STACK_OPTIONS = {"api_groups": TRAINER_API_GROUPS}


async def test_a_failed_trainjob_without_pods_shows_its_restart(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("record")
    await h.kube.create(TRAINING_RUNTIMES, strict_runtime(), namespace=ns)
    await h.kube.create(
        TRAINJOBS,
        trainjob("boom", num_nodes=2, runtime="strict", runtime_kind="TrainingRuntime"),
        namespace=ns,
    )
    await h.wait_pod_names(ns, "boom", ["boom-node-0-0", "boom-node-0-1"])
    await h.sim.finish(ns, "boom-node-0-1", exit_code=1)

    async def second_attempt() -> bool | None:
        labels = [p["metadata"]["labels"] for p in await h.pods(ns, "boom")]
        fresh = [x for x in labels if x.get("jobset.sigs.k8s.io/restart-attempt") == "1"]
        return True if len(fresh) == 2 else None

    await eventually(second_attempt, what="both pods recreated as restart attempt 1")
    await h.sim.finish(ns, "boom-node-0-0", exit_code=1)
    tj = await wait_condition(h, ns, "boom", "Failed")

    async def no_pods() -> bool | None:
        return True if not await h.pods(ns, "boom") else None

    await eventually(no_pods, what="the failed TrainJob's pods deleted")
    watch = JobWatch(h.kube, served_kinds(["trainer.kubeflow.org"]))
    await watch.start(sync_timeout=10)
    try:
        row = watch.rows[(TRAINJOB.group, TRAINJOB.plural, ns, "boom")]
        assert row.state == "Failed"
        assert watch.pods_of(ns, "boom", tj["metadata"]["uid"]) == []
        assert row.restarts == 1  # the whole-gang restart, from the record alone
        assert watch.refused == set()
    finally:
        await watch.stop()
