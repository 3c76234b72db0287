"""Every field of Kubeflow Trainer's v1alpha1 API is classified in docs/behaviour.md §11 ("Every
field of Trainer's API"): what kubetrain does with it — runs, refuses, warns, no effect, status.
The fields are those of tests/data/trainer/api_fields.txt (derived from Trainer's Go types by
tests/trainer_api_fields.py, at the commit it names). Given clones of Trainer and JobSet
(KUBETRAIN_TRAINER_GIT_DIR, KUBETRAIN_JOBSET_GIT_DIR: their git directories), the list is derived
again from Trainer's newest commit there, so a field Trainer adds fails this test until it is
listed and classified."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from trainer_api_fields import derive, read_list

ROOT = Path(__file__).resolve().parents[2]
LIST = ROOT / "tests" / "data" / "trainer" / "api_fields.txt"
DOC = ROOT / "docs" / "behaviour.md"
SECTION = "### Every field of Trainer's API"
CLASSES = {"runs", "refuses", "warns", "no effect", "status"}
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \| (.+) \|$")


def listed() -> list[str]:
    """The kept list's field paths (without their Go type)."""
    return [line.rsplit(" (", 1)[0] for line in read_list(LIST)[1]]


def table() -> dict[str, tuple[str, str]]:
    """The docs table: field path -> (class, how)."""
    text = DOC.read_text()
    start = text.index(SECTION)
    end = text.index("\n### ", start + len(SECTION))
    rows: dict[str, tuple[str, str]] = {}
    for line in text[start:end].splitlines():
        match = _ROW.match(line)
        if match:
            path, klass, how = match.groups()
            assert path not in rows, f"{path} is in the table twice"
            rows[path] = (klass, how)
    return rows


def test_the_kept_list_names_the_trainer_and_jobset_versions_it_was_derived_from() -> None:
    header, fields = read_list(LIST)
    assert re.fullmatch(r"[0-9a-f]{40}", header["trainer"]), header
    assert header["jobset"].startswith("v"), header
    assert len(fields) == len(set(fields)) > 90


def test_every_field_is_classified_in_the_docs_and_nothing_else_is() -> None:
    rows = table()
    fields = listed()
    assert [f for f in fields if f not in rows] == [], "fields of Trainer's API missing from the docs table"
    assert [p for p in rows if p not in fields] == [], "docs table rows naming no field of Trainer's API"
    assert list(rows) == fields, "the docs table is not in the list's order"
    for path, (klass, how) in rows.items():
        assert klass in CLASSES, f"{path}: {klass!r} is none of {sorted(CLASSES)}"
        assert how.strip(), f"{path}: says nothing of how"


def test_the_fields_kubetrain_refuses_or_warns_about_are_the_ones_its_rules_name() -> None:
    """The table's refuses/warns rows are the fields kubetrain's admission rules answer for
    (a runtime setting each is refused, or admitted with a warning, naming the field)."""
    rows = table()
    assert sorted(p for p, (k, _) in rows.items() if k == "refuses") == [
        "(Cluster)TrainingRuntime.spec.template.spec.managedBy"
    ]
    assert sorted(p for p, (k, _) in rows.items() if k == "warns") == [
        "(Cluster)TrainingRuntime.spec.template.spec.suspend"
    ]


def test_the_deriver_reads_go_types_as_trainer_writes_them() -> None:
    """The parser of tests/trainer_api_fields.py on a struct in Trainer's style: inlined
    embeds flattened, pointers and lists unwrapped, other packages' types leaves."""
    from trainer_api_fields import structs, walk

    source = """
type Root struct {
	metav1.TypeMeta `json:",inline"`
	// The spec.
	Spec RootSpec `json:"spec,omitzero"`
}
type RootSpec struct {
	Inline `json:",inline"`
	Items []Item `json:"items,omitempty"`
	Env []corev1.EnvVar `json:"env,omitempty"`
}
type Inline struct {
	Count *int32 `json:"count,omitempty"` // trailing comment
}
type Item struct {
	Name string `json:"name"`
	Hidden string `json:"-"`
}
"""
    assert walk(structs(source), "Root") == [
        "Root.spec.count (int32)",
        "Root.spec.items[].name (string)",
        "Root.spec.env[] (corev1.EnvVar)",
    ]


@pytest.mark.skipif(
    not (os.environ.get("KUBETRAIN_TRAINER_GIT_DIR") and os.environ.get("KUBETRAIN_JOBSET_GIT_DIR")),
    reason="no clone of Trainer and JobSet given (KUBETRAIN_TRAINER_GIT_DIR, KUBETRAIN_JOBSET_GIT_DIR)",
)
def test_trainers_newest_types_have_no_field_the_list_lacks() -> None:
    derived = derive(os.environ["KUBETRAIN_TRAINER_GIT_DIR"], os.environ["KUBETRAIN_JOBSET_GIT_DIR"])
    kept = read_list(LIST)[1]
    assert [f for f in derived if f not in kept] == [], (
        "Trainer's API has fields kubetrain has not classified: regenerate "
        "tests/data/trainer/api_fields.txt and classify them in docs/behaviour.md"
    )
    assert [f for f in kept if f not in derived] == [], "fields Trainer's API no longer has"
