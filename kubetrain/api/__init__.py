"""The kubetrain.io/v1 API — pure and framework-agnostic: the pydantic models of each kind and of
TrainingPolicy, field errors, resource quantities, pod templates and pod resources, labels, and
the gang schedulers' PodGroup APIs. Nothing here imports `kubetrain.frameworks`; the rules that
need a job's framework live in `kubetrain.jobs`."""
