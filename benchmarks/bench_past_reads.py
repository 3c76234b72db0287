"""devcluster's reads at an older resourceVersion (Store.items_at via the list handler's Reader):
an Exact list of N ConfigMaps at a version K writes ago, and paging through the N-object list
while writes happen between pages.

    .venv/bin/python benchmarks/bench_past_reads.py [--objects 10000] [--limit 500] [--repeat 3]

In-process, no HTTP: the time is the Reader's (rebuilding, filtering, sorting, and the list's
`out` conversion), best of `--repeat`, CPU seconds. Paging is measured twice: with each list's
sorted result kept (the normal path for a token among the 64 most recent paginated lists) and
with it dropped before every page (what a token older than those pays: a rebuild per page).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _common import best_cpu_seconds

from kubetrain.devcluster import DevCluster
from kubetrain.devcluster.apiserver.kinds import meta
from kubetrain.devcluster.apiserver.request.target import Target
from kubetrain.devcluster.apiserver.verbs.reads import ListQuery, Reader

NS = "bench"


class Bench:
    def __init__(self, objects: int, window: int) -> None:
        self.cluster = DevCluster(watch_window=window, compaction_interval=0)
        self.store = self.cluster.store
        rt = self.cluster.registry.lookup("", "v1", "configmaps")
        assert rt is not None
        self.rt = rt
        self.target = Target(rt, "v1", NS, "")
        self.reader: Reader = self.cluster.handlers.reader
        self.objects = objects
        for i in range(objects):
            obj: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:06d}"},
            }
            obj["metadata"]["namespace"] = NS
            obj["data"] = {"v": "0"}
            meta.prepare_create(obj, rt, NS, self.cluster.api.clock())
            self.store.create(rt.key, obj)
        self.writes = 0

    def write(self, n: int) -> None:
        """n updates, spread over the objects (each a new stored dict, as every write is)."""
        for _ in range(n):
            name = f"cm-{(self.writes * 7919) % self.objects:06d}"
            old = self.store.get(self.rt.key, NS, name)
            assert old is not None
            new = {**old, "metadata": {**old["metadata"]}, "data": {"v": str(self.writes)}}
            self.store.update(self.rt.key, new, None)
            self.writes += 1

    def exact(self, rv: int) -> int:
        listed = self.reader.list_page(
            self.target, ListQuery(resource_version=str(rv), resource_version_match="Exact")
        )
        assert listed["metadata"]["resourceVersion"] == str(rv)
        return len(listed["items"])

    def page_through(self, limit: int, writes_between: int, keep: bool) -> float:
        """CPU seconds of the list calls only (the writes between pages are not counted)."""
        start = time.process_time()
        page = self.reader.list_page(self.target, ListQuery(limit=limit))
        spent = time.process_time() - start
        rv, seen = page["metadata"]["resourceVersion"], len(page["items"])
        while page["metadata"].get("continue"):
            self.write(writes_between)
            if not keep:
                self.reader._snapshots.clear()
            q = ListQuery(limit=limit, continue_token=page["metadata"]["continue"])
            start = time.process_time()
            page = self.reader.list_page(self.target, q)
            spent += time.process_time() - start
            assert page["metadata"]["resourceVersion"] == rv
            seen += len(page["items"])
        assert seen == self.objects
        return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10000)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ks = (0, 100, 1000, 10000)
    bench = Bench(args.objects, window=max(ks) + 1000)
    print(f"Exact list of {args.objects} ConfigMaps in one namespace, K writes after the version read:")
    for k in ks:
        bench.write(k - bench.writes if k > bench.writes else 0)
        rv = bench.store.rv - k
        seconds = best_cpu_seconds(args.repeat, lambda _: bench.exact(rv), range(1))  # noqa: B023 (called at once)
        print(f"  K={k:>6}: {seconds * 1000:8.1f} ms")
    pages = -(-args.objects // args.limit)
    for writes_between in (0, 10):
        for keep in (True, False):
            seconds = min(bench.page_through(args.limit, writes_between, keep) for _ in range(args.repeat))
            label = "result kept" if keep else "rebuilt per page"
            print(
                f"paging {args.objects} by {args.limit} ({pages} pages), {writes_between} writes between "
                f"pages, {label}: {seconds * 1000:8.1f} ms ({seconds * 1000 / pages:.1f} ms/page)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
