"""An annotation-only edit of a KubeDL annotation (`kubectl annotate --overwrite`) is checked by
the validating webhook like the job's other annotations: a malformed tenancy, code-sync or
TensorBoard config is refused naming the annotation and its field — instead of passing as
metadata and failing the running job (InvalidSpec) whenever the operator next prepares it."""

from __future__ import annotations

import copy
import json

import pytest
from admission import review_of
from jobs import job, replica

from kubetrain.webhook.validate import validate

GIT = "kubedl.io/git-sync-config"
TB = "kubedl.io/tensorboard-config"
TENANCY = "kubedl.io/tenancy"


def stored() -> dict[str, object]:
    obj = job("TFJob", "tf", {"Worker": replica("TFJob", 1)}, namespace="ns")
    obj["metadata"]["annotations"] = {
        GIT: json.dumps({"source": "https://github.com/org/repo.git"}),
        TENANCY: json.dumps({"tenant": "vision"}),
    }
    return obj


def annotated(key: str, value: str) -> tuple[dict[str, object], dict[str, object]]:
    old = stored()
    new = copy.deepcopy(old)
    new["metadata"]["annotations"][key] = value  # type: ignore[index]
    return new, old


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            GIT,
            '{"source": "https://github.com/org/repo.git",',
            f"metadata.annotations[{GIT}]: Invalid: not valid JSON",
        ),
        (TB, json.dumps({"logdir": "/logs"}), f"metadata.annotations[{TB}].logdir: Invalid: unknown field"),
        (
            TENANCY,
            json.dumps({"tenant": 7}),
            f"metadata.annotations[{TENANCY}].tenant: Invalid: must be a string",
        ),
    ],
)
def test_a_malformed_kubedl_annotation_edit_is_refused(key: str, value: str, message: str) -> None:
    new, old = annotated(key, value)
    response = validate(review_of(new, "UPDATE", old=old))
    assert not response.allowed
    assert message in response.message


def test_a_valid_edit_and_an_untouched_malformed_annotation_pass() -> None:
    new, old = annotated(TB, json.dumps({"logDir": "/logs"}))
    assert validate(review_of(new, "UPDATE", old=old)).allowed
    # A job stored before with a malformed annotation may still get other metadata edits.
    old = stored()
    old["metadata"]["annotations"][TENANCY] = "not json"  # type: ignore[index]
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}  # type: ignore[index]
    assert validate(review_of(new, "UPDATE", old=old)).allowed
