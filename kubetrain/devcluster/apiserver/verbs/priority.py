"""kube-apiserver's Priority admission plugin (plugin/pkg/admission/priority admission.go) and the
PriorityClass registry's delete rule, over the PriorityClasses in the store (kinds/priorityclasses.py).

- Pods, mutating, before the webhooks (`admitPod`): on create the priority is the named class's
  value and its preemptionPolicy; a class that does not exist is 403 `no PriorityClass with name
  <n> was found`. Without a name the globalDefault class (of several, the lowest value:
  `getDefaultPriorityClass`) is named and gives both; without one the priority is 0 and the policy
  PreemptLowerPriority (`getDefaultPriority`). A `spec.priority` or `spec.preemptionPolicy` other
  than the computed one is 403. On update a priority or policy left out is the stored one.
- PriorityClasses, validating (`validatePriorityClass`): a second globalDefault class is 403
  `PriorityClass <n> is already marked as default. Only one default can exist`.
- A system class cannot be deleted (pkg/registry/scheduling/priorityclass/storage storage.go
  `REST.Delete`: 403 `this is a system priority class and cannot be deleted`); as upstream,
  deletecollection goes around that rule.
"""

from __future__ import annotations

from kubetrain.devcluster.apiserver.base import errors
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import priorityclasses
from kubetrain.devcluster.apiserver.kinds.priorityclasses import PRIORITY_CLASSES_KEY
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.storage.store import Store


def default_class(store: Store) -> Obj | None:
    """`getDefaultPriorityClass`: the globalDefault class, the lowest valued of several."""
    found: Obj | None = None
    for pc in store.items(PRIORITY_CLASSES_KEY):
        if pc.get("globalDefault") is True and (
            found is None or priorityclasses.value_of(found) > priorityclasses.value_of(pc)
        ):
            found = pc
    return found


def admit_pod(store: Store, t: Target, pod: Obj, old: Obj | None, request_name: str) -> None:
    """`admitPod` on a pod create or update (not on subresources); `request_name` is the name
    its errors give (kube-apiserver's admission attributes have none for a generateName)."""
    if t.rt.key != "pods" or t.subresource:
        return
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    if old is not None:
        old_spec = old.get("spec") or {}
        for field in ("priority", "preemptionPolicy"):
            if spec.get(field) is None and old_spec.get(field) is not None:
                spec[field] = old_spec[field]
        return
    name = spec.get("priorityClassName") or ""
    pod_name = request_name
    if not name:
        pc = default_class(store)
        spec["priorityClassName"] = pc["metadata"]["name"] if pc is not None else ""
        if not spec["priorityClassName"]:
            del spec["priorityClassName"]  # omitempty: an empty name is not served
    else:
        pc = store.get(PRIORITY_CLASSES_KEY, "", str(name))
        if pc is None:
            raise errors.forbidden(t.rt.gr, pod_name, f"no PriorityClass with name {name} was found")
    if pc is None:
        computed = priorityclasses.DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS
        policy: str | None = "PreemptLowerPriority"
    else:
        computed, policy = priorityclasses.value_of(pc), pc.get("preemptionPolicy") or None
    given = spec.get("priority")
    if isinstance(given, int) and not isinstance(given, bool) and given != computed:
        raise errors.forbidden(
            t.rt.gr,
            pod_name,
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {computed} from the given PriorityClass name",
        )
    spec["priority"] = computed
    if policy:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise errors.forbidden(
                t.rt.gr,
                pod_name,
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod "
                f"spec; priority admission controller computed {policy} from the given PriorityClass name",
            )
        spec["preemptionPolicy"] = policy


def validate_priority_class(store: Store, t: Target, pc: Obj, creating: bool) -> None:
    """`validatePriorityClass` on a PriorityClass create or update."""
    if t.rt.key != PRIORITY_CLASSES_KEY or t.subresource or pc.get("globalDefault") is not True:
        return
    current = default_class(store)
    name = str(pc["metadata"].get("name", ""))
    if current is not None and (creating or current["metadata"]["name"] != name):
        raise errors.forbidden(
            t.rt.gr,
            name,
            f"PriorityClass {current['metadata']['name']} is already marked as default. "
            "Only one default can exist",
        )


def check_delete(t: Target) -> None:
    """The PriorityClass registry's `Delete`: the system classes stay."""
    if t.rt.key == PRIORITY_CLASSES_KEY and t.name in priorityclasses.SYSTEM_PRIORITY_CLASSES:
        raise errors.forbidden(t.rt.gr, t.name, "this is a system priority class and cannot be deleted")
