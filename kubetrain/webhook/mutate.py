"""The mutating webhook: write the defaults of docs/behaviour.md §2 into the stored job.

The defaulted object comes from the same pure function the controller uses
(`kubetrain.jobs.defaulting.default_job`); the answer is the JSONPatch from the request's object to
the defaulted one. `json_patch` narrows the comparison to what differs (the common keys of two
dicts and the items of two lists of the same length are compared pairwise; sub-objects the
defaulted job shares with the request are skipped by identity, equal ones with one C-speed `==`),
writes the operations defaulting needs directly (add a key, append to a list, replace a scalar)
and lets `jsonpatch.make_patch` diff the rest (renamed keys become `move`, other list changes),
re-rooted under the JSON pointer of that subtree. The result is the same kind of patch
make_patch gives for the whole object, at a fraction of the cost (make_patch's list comparison
is quadratic in Python, and it deep-copies every value it puts into the patch). Requests for
kinds that are not ours (a misconfigured webhook rule) are allowed untouched, with a warning in
the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import jsonpatch

from kubetrain.frameworks.registry import get_framework
from kubetrain.jobs.createdversion import record_created_version
from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse

if TYPE_CHECKING:
    from kubetrain.webhook.policies import PolicyAdmission

log = logging.getLogger(__name__)


def is_job_kind(kind: str) -> bool:
    return get_framework(kind) is not None


def _escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _reroot(ops: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    if not prefix:
        return ops
    out = []
    for op in ops:
        op = dict(op)
        op["path"] = prefix + op["path"]
        if "from" in op:
            op["from"] = prefix + op["from"]
        out.append(op)
    return out


def json_patch(src: Any, dst: Any, prefix: str = "") -> list[dict[str, Any]]:
    """The JSONPatch (RFC 6902) turning `src` into `dst`.

    The common cases of defaulting are written directly: keys only `dst` has become `add`, keys
    only `src` has become `remove`, items appended to a list become `add` at their index, and a
    changed scalar is a `replace`. Anything else (a renamed key, a list that changed other than
    by appending, the root replaced) is left to `jsonpatch.make_patch`, re-rooted under `prefix`.
    """
    # default_job shares unchanged sub-objects with its input: skip them without comparing.
    if src is dst or src == dst:
        return []
    if isinstance(src, dict) and isinstance(dst, dict):
        ops: list[dict[str, Any]] = []
        common = 0
        for key, value in src.items():
            if key in dst:
                common += 1
                # A value defaulting left shared is skipped before its path is even spelled.
                if value is not (other := dst[key]):
                    ops += json_patch(value, other, f"{prefix}/{_escape(key)}")
        if common == len(src) == len(dst):
            return ops  # the same keys: nothing removed or added
        removed = {k: v for k, v in src.items() if k not in dst}
        added = {k: v for k, v in dst.items() if k not in src}
        if removed and added:
            # make_patch turns a renamed key into a `move` instead of a remove and an add.
            return ops + _reroot(list(jsonpatch.make_patch(removed, added).patch), prefix)
        ops += [{"op": "remove", "path": f"{prefix}/{_escape(k)}"} for k in removed]
        ops += [{"op": "add", "path": f"{prefix}/{_escape(k)}", "value": v} for k, v in added.items()]
        return ops
    if isinstance(src, list) and isinstance(dst, list):
        if len(src) == len(dst):
            ops = []
            for i, (a, b) in enumerate(zip(src, dst, strict=True)):
                if a is not b:
                    ops += json_patch(a, b, f"{prefix}/{i}")
            return ops
        if len(dst) > len(src) and dst[: len(src)] == src:
            return [
                {"op": "add", "path": f"{prefix}/{i}", "value": dst[i]} for i in range(len(src), len(dst))
            ]
    elif prefix and not isinstance(src, (dict, list)) and not isinstance(dst, (dict, list)):
        return [{"op": "replace", "path": prefix, "value": dst}]
    return _reroot(list(jsonpatch.make_patch(src, dst).patch), prefix)


def mutate(
    request: AdmissionRequest, *, gang_scheduling: bool = False, policies: PolicyAdmission | None = None
) -> AdmissionResponse:
    """Answer one mutating AdmissionReview request (TrainingPolicy defaults after the built-in
    ones; then the apiVersion the client created the job at, kubetrain.jobs.createdversion)."""
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return AdmissionResponse.allow(request.uid)
    if not is_job_kind(request.kind):
        log.warning(
            "mutate: %s %s/%s is not a kubetrain job kind; allowed unchanged "
            "(check the webhook configuration's rules)",
            request.kind,
            request.namespace,
            request.name,
        )
        return AdmissionResponse.allow(request.uid)
    original = request.object
    assert original is not None  # decode_review guarantees an object for CREATE/UPDATE
    old = request.old_object if request.operation == "UPDATE" else None
    defaulted = default_job(original, gang_scheduling=gang_scheduling, old=old)
    result = defaulted.obj if policies is None else policies.apply_defaults(request, defaulted.obj).obj
    result, recorded = record_created_version(result, request.request_version, old)
    patch = json_patch(original, result)
    response = AdmissionResponse.allow(request.uid, defaulted.warnings + recorded)
    response.patch = patch or None
    return response
