"""The pod template validator is built at operator start-up (`podtemplate.warm`), not on the
first job's create path; what it decides is the same however often it is rebuilt."""

from __future__ import annotations

from kubetrain.api import podtemplate


def _rebuild() -> None:
    podtemplate._validator.cache_clear()
    podtemplate.pod_template_schema.cache_clear()
    podtemplate.TEMPLATE_CACHE.clear()


def bad_template() -> dict[str, object]:
    return {
        "spec": {
            "restartPolicy": "Sometimes",
            "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 1, "protocol": "QUIC"}]}],
        }
    }


def test_warm_builds_the_validator_once() -> None:
    _rebuild()
    podtemplate.warm()
    assert podtemplate._validator.cache_info().currsize == 1
    podtemplate.warm()
    assert podtemplate._validator.cache_info().hits >= 1  # the second warm-up reuses it


def test_a_rebuilt_schema_keeps_kubetrains_enums() -> None:
    _rebuild()
    first = podtemplate.schema_errors_of(bad_template())
    _rebuild()
    second = podtemplate.schema_errors_of(bad_template())
    assert first == second
    paths = [path for path, _, _ in first]
    assert any(p.endswith("restartPolicy") for p in paths), first
    assert any(p.endswith("protocol") for p in paths), first
