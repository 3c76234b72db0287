"""Bounds on what one job may cost: the replica limit, the byte-bounded template cache, the
per-template error cap."""

from __future__ import annotations

from typing import Any

from kubetrain.api import podtemplate
from kubetrain.api.sizedcache import SizedLRU
from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import DEFAULT_MAX_REPLICAS, validate_job
from kubetrain.operator.prepare import JobCache, prepare_job


def job(workers: int, ps: int = 1, **spec: Any) -> dict[str, Any]:
    def rspec(n: int) -> dict[str, Any]:
        return {"replicas": n, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}

    return default_job(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "TFJob",
            "metadata": {"name": "huge", "namespace": "ns", "uid": "u1", "generation": 1},
            "spec": {"tfReplicaSpecs": {"Worker": rspec(workers), "PS": rspec(ps)}, **spec},
        }
    ).obj


def elastic(workers: int, max_replicas: int) -> dict[str, Any]:
    return default_job(
        {
            "apiVersion": "kubetrain.io/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "el", "namespace": "ns"},
            "spec": {
                "elasticPolicy": {"minReplicas": 1, "maxReplicas": max_replicas},
                "pytorchReplicaSpecs": {
                    "Worker": {
                        "replicas": workers,
                        "template": {"spec": {"containers": [{"name": "pytorch", "image": "p"}]}},
                    }
                },
            },
        }
    ).obj


def test_default_limit_refuses_a_million_replicas_naming_field_total_and_limit() -> None:
    assert DEFAULT_MAX_REPLICAS == 10_000
    result = validate_job(job(1_000_000))
    [error] = [e for e in result.errors if e.path == "spec.tfReplicaSpecs"]
    assert "1000001 replicas in total" in error.message
    assert f"at most {DEFAULT_MAX_REPLICAS} replicas per job" in error.message
    assert validate_job(job(9_999)).ok


def test_limit_is_configurable_and_counts_elastic_workers_at_their_maximum() -> None:
    assert not validate_job(job(4), max_replicas=4).ok  # 4 Workers + 1 PS
    assert validate_job(job(3), max_replicas=4).ok
    errors = validate_job(elastic(2, 50), max_replicas=10).errors
    assert any(
        "50 replicas in total (Workers counted at the maximum of elasticPolicy minReplicas..maxReplicas)"
        in e.message
        for e in errors
    )
    assert validate_job(elastic(2, 10), max_replicas=10).ok


def test_controller_prepare_refuses_a_stored_job_over_the_limit() -> None:
    prepared = prepare_job(job(20), max_replicas=10)
    assert not prepared.valid
    assert any("21 replicas in total" in e for e in prepared.errors)
    cache = JobCache()
    assert cache.get(job(20), max_replicas=100).valid
    assert not cache.get(job(20), max_replicas=10).valid  # the limit is part of the cache key


def test_sized_lru_evicts_by_bytes_and_skips_oversized_entries() -> None:
    cache: SizedLRU[str, int] = SizedLRU(max_bytes=100, max_entry_bytes=60)
    cache.put("a", 1, cost=40)
    cache.put("b", 2, cost=40)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3, cost=40)  # 120 > 100: b (least recently used) goes
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.bytes == 80
    cache.put("big", 4, cost=61)
    assert cache.get("big") is None and len(cache) == 2
    cache.put("a", 5, cost=10)  # replacing an entry re-charges it
    assert cache.bytes == 50 and cache.get("a") == 5


def test_template_cache_stays_within_its_byte_budget() -> None:
    podtemplate.TEMPLATE_CACHE.clear()
    for i in range(40):
        big = job(1)
        container = big["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        container["args"] = [f"{i}-" + "x" * 500_000]
        assert validate_job(big).ok
    assert podtemplate.TEMPLATE_CACHE.bytes <= podtemplate.TEMPLATE_CACHE_BYTES
    assert len(podtemplate.TEMPLATE_CACHE) < 40


def test_template_errors_stop_after_the_cap() -> None:
    big = job(1)
    container = big["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container.update({f"junk{i}": i for i in range(5_000)})
    errors = validate_job(big).errors
    assert len(errors) <= podtemplate.MAX_TEMPLATE_ERRORS + 1
    assert any(e.message == podtemplate.TOO_MANY_ERRORS for e in errors)
