"""ReplicaDraft.evolve: defaulting's cheap `dataclasses.replace`, with the same result."""

from __future__ import annotations

import dataclasses

import pytest

from kubetrain.jobs.replicadraft import ReplicaDraft


def test_evolve_gives_what_replace_gives_and_leaves_the_draft_as_it_was() -> None:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "i"}]}}
    draft = ReplicaDraft("worker", "Worker", "spec.pytorchReplicaSpecs", {"replicas": 2}, 2, template)
    changed = draft.evolve(key="Worker", spec={"replicas": 3}, replicas=3)
    assert changed == dataclasses.replace(draft, key="Worker", spec={"replicas": 3}, replicas=3)
    assert changed.path == "spec.pytorchReplicaSpecs[Worker]" and changed.count == 3
    assert draft.key == "worker" and draft.replicas == 2  # a new draft; the old one is unchanged
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.key = "Other"  # type: ignore[misc]


def test_evolve_refuses_a_name_that_is_not_a_field() -> None:
    draft = ReplicaDraft("Worker", "Worker", "spec.tfReplicaSpecs", {})
    with pytest.raises(TypeError, match="replica"):
        draft.evolve(replica=1)
