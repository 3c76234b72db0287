"""Every property of every CRD kubetrain generates (all groups, all versions) has a description,
which `kubectl explain` prints; the descriptions come from the model fields and change nothing
else in the schemas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from kubetrain.api.common import ReplicaSpec, RunPolicy
from kubetrain.api.groups import SERVABLE_GROUPS
from kubetrain.api.trainer.trainjob import Trainer
from kubetrain.jobs.trainercrds import group_crds


def versions(crds: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`<crd name> <version>`, openAPIV3Schema) of every version of every CRD."""
    for crd in crds:
        for version in crd["spec"]["versions"]:
            yield f"{crd['metadata']['name']} {version['name']}", version["schema"]["openAPIV3Schema"]


def properties(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON path, schema) of every property below `schema`, through map values (`[*]`) and
    array items (`[]`)."""
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}.{name}", sub
        yield from properties(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from properties(schema["additionalProperties"], f"{path}[*]")
    if isinstance(schema.get("items"), dict):
        yield from properties(schema["items"], f"{path}[]")


def without_descriptions(schema: Any) -> Any:
    """`schema` with every `description` keyword removed (not a property named so)."""
    if isinstance(schema, list):
        return [without_descriptions(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: without_descriptions(v) for k, v in schema.items() if k not in ("description", "properties")}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: without_descriptions(v) for k, v in schema["properties"].items()}
    for key in ("$defs",):
        if isinstance(schema.get(key), dict):
            out[key] = {k: without_descriptions(v) for k, v in schema[key].items()}
    return out


ALL_CRDS = [crd for group in SERVABLE_GROUPS for crd in group_crds(group)]


def test_every_property_of_every_crd_is_described() -> None:
    missing = [
        f"{crd} {path}"
        for crd, schema in versions(ALL_CRDS)
        for path, prop in properties(schema)
        # The API server refuses anything but `type` on the root metadata (apiextensions-apiserver
        # `validateStructuralMetadataInvariants`); it publishes ObjectMeta's description itself.
        if path != ".metadata" and not str(prop.get("description", "")).strip()
    ]
    assert not missing, "properties without a description (give the model field one):\n" + "\n".join(missing)
    assert {crd["spec"]["group"] for crd in ALL_CRDS} == set(SERVABLE_GROUPS)


def test_an_enum_property_names_its_valid_values() -> None:
    unnamed = [
        f"{crd} {path}: {value}"
        for crd, schema in versions(ALL_CRDS)
        for path, prop in properties(schema)
        for value in prop.get("enum", [])
        if value and str(value) not in prop["description"]
    ]
    assert not unnamed, "enum values the description does not name:\n" + "\n".join(unnamed)


def test_descriptions_are_the_model_fields_not_the_class_docstrings() -> None:
    (pytorchjob,) = [c for c in group_crds("kubeflow.org") if c["spec"]["names"]["kind"] == "PyTorchJob"]
    spec = pytorchjob["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    run_policy = spec["runPolicy"]
    assert RunPolicy.__doc__ and run_policy["description"] != RunPolicy.__doc__
    for name, field in RunPolicy.model_fields.items():
        key = field.alias or name
        if key in run_policy["properties"]:
            assert run_policy["properties"][key]["description"] == field.description, key
    # A map's values (a ReplicaSpec per replica type) carry no class docstring either.
    replica = spec["pytorchReplicaSpecs"]["additionalProperties"]
    assert "description" not in replica and ReplicaSpec.__doc__
    (trainjob,) = [c for c in group_crds("trainer.kubeflow.org") if c["spec"]["names"]["kind"] == "TrainJob"]
    trainer = trainjob["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert (
        trainer["trainer"]["properties"]["numNodes"]["description"]
        == Trainer.model_fields["num_nodes"].description
    )


def test_descriptions_change_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CRDs built from models whose JSON Schema has no descriptions are the same, but for
    descriptions: types, formats, enums, bounds, defaults, list types and rules are untouched."""
    described = [without_descriptions(schema) for _, schema in versions(ALL_CRDS)]
    json_schema = BaseModel.model_json_schema.__func__  # type: ignore[attr-defined]

    def undescribed(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = without_descriptions(json_schema(cls, *args, **kwargs))
        return out

    monkeypatch.setattr(BaseModel, "model_json_schema", classmethod(undescribed))
    plain = [schema for group in SERVABLE_GROUPS for _, schema in versions(group_crds(group))]
    assert "description" not in plain[0]["properties"]["spec"]["properties"]["runPolicy"]  # no model's
    assert described == [without_descriptions(schema) for schema in plain]
