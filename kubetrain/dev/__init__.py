"""The whole system in one process — devcluster, CRDs, webhook, controller, pod simulator
(stack.py: `DevStack`) — for `kubetrain dev`, the integration tests and the benchmarks."""
