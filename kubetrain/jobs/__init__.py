"""The rules for jobs of every registered kind — pure: parse (wire dict → model, with
Kubernetes-style field errors), defaulting, validation and CRD generation. They sit above
`kubetrain.frameworks` (they look a job's framework up in the registry and call its hooks) and
below everything that serves them (webhook, operator, CLI)."""
