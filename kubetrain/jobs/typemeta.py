"""A job's type meta: whether its `kind` and `apiVersion` name a job kubetrain serves.

`check_type_meta` is read once, by the parse stage (`jobdraft.read_draft`, which settles the
job's framework by the same `kind`), for every later stage to take as `JobDraft.type_errors`;
`parse.parse_job` and `kubetrain validate` ask it directly. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubetrain.api.errors import QUOTE, ErrorKind, FieldError, invalid, json_type, not_supported, required
from kubetrain.api.groups import JOB_GROUPS, JOB_VERSION, KUBEDL_GROUP, KUBEFLOW_GROUP, KUBETRAIN_GROUP
from kubetrain.frameworks.registry import (
    converted_versions,
    get_framework,
    group_serves,
    job_version,
    known_kinds,
)

GROUP_VERSION = f"{KUBETRAIN_GROUP}/{JOB_VERSION}"


def check_type_meta(obj: Any, groups: Sequence[str] = JOB_GROUPS) -> list[FieldError]:
    """`apiVersion` and `kind` problems (empty when the object names a known kind of ours in one
    of `groups`: the API groups served, kubetrain.api.groups — both for the webhook and the
    controller, which only ever see the groups they serve; `kubetrain validate` says which)."""
    if not isinstance(obj, dict):
        return [invalid("<root>", f"must be a mapping (a Kubernetes object), got {json_type(obj)}")]
    errors: list[FieldError] = []
    kind = obj.get("kind")
    if kind is None or kind == "":
        errors.append(required("kind", f"must be one of {', '.join(known_kinds())}"))
    elif not isinstance(kind, str) or get_framework(kind) is None:
        errors.append(not_supported("kind", kind, known_kinds()))
    api_version = obj.get("apiVersion")
    typed = kind if isinstance(kind, str) else ""
    versions = [
        f"{g}/{job_version(typed, g)}"
        for g in groups
        if not isinstance(kind, str) or get_framework(kind) is None or group_serves(g, kind)
    ]
    supported = " or ".join(f'"{gv}"' for gv in versions)
    if api_version is None or api_version == "":
        errors.append(required("apiVersion", f"must be {supported}"))
    elif api_version not in versions:
        hint = ""
        kubeflow_v1 = api_version == f"{KUBEFLOW_GROUP}/{JOB_VERSION}"
        if (
            kubeflow_v1
            and JOB_VERSION in converted_versions(typed, KUBEFLOW_GROUP)
            and KUBEFLOW_GROUP in groups
        ):
            stored = f"{KUBEFLOW_GROUP}/{job_version(typed, KUBEFLOW_GROUP)}"
            hint = (
                f" (served through kubetrain's conversion webhook: the API server converts it to "
                f"{stored}; `kubetrain migrate FILE` rewrites the file)"
            )
        elif kubeflow_v1:
            hint = (
                f' (a Kubeflow manifest migrates by changing apiVersion to "{GROUP_VERSION}", or '
                "is served as it is by an operator run with --api-groups including kubeflow.org)"
            )
        elif (
            isinstance(api_version, str)
            and api_version.startswith("kubeflow.org/")
            and get_framework(typed) is not None  # not e.g. Katib's kubeflow.org/v1beta1 Experiment
        ):
            hint = " (an older Kubeflow version: `kubetrain migrate FILE` rewrites it)"
        elif api_version == f"{KUBEDL_GROUP}/{job_version(typed, KUBEDL_GROUP)}" and group_serves(
            KUBEDL_GROUP, typed
        ):
            hint = (
                f" (KubeDL's group: served as it is by an operator run with --api-groups including "
                f'{KUBEDL_GROUP}, or `kubetrain migrate FILE` rewrites it to "{GROUP_VERSION}")'
            )
        errors.append(
            FieldError(
                "apiVersion",
                ErrorKind.NOT_SUPPORTED,
                f"{QUOTE.encode(api_version)} is not supported: must be {supported}{hint}",
            )
        )
    return errors
