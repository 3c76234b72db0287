"""The only package that talks to the Kubernetes API server.

Modules (each documents its API in its docstring):
- `client`      KubeClient: plain-dict get/list/list_all/watch/create/replace/patch/
                replace_status/patch_status/delete/has_api; ApiError / GoneError;
                client-side QPS/burst token bucket; `kubetrain_api_requests_total`.
- `resources`   ResourceRef and the resources kubetrain uses (PODS, SERVICES, EVENTS, LEASES,
                job kinds via `job_resource(kind)`, both PodGroup APIs, TrainingPolicies, …).
- `cache`       Cache / Store: the shared informer cache (by namespace/name, by job-name label).
- `informer`    Informer: paginated list + watch with bookmarks, relist only on 410 Gone,
                reconnect with back-off, handlers.
- `workqueue`   WorkQueue: dedupe, per-key serialisation, add_after/add_at, exponential back-off.
- `expectations` Expectations: pending child creates/deletes per job, with a TTL.
- `leader`      LeaderElector: coordination.k8s.io/v1 Lease leader election.
- `events`      EventRecorder: aggregated core/v1 Events.
- `clock`       Clock protocol, SystemClock, FakeClock (tests drive time by hand).
- `ratelimit`   TokenBucket.
"""
