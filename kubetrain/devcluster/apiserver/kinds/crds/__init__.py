"""CustomResourceDefinition validation, as apiextensions-apiserver does it.

`validation.crd_causes` is the entry (names, group, scope, versions, subresources, printer
columns); `schema` holds the per-field schema rules, `structural` the structural-schema rules and
defaults, `conversion` the conversion strategy, `lifecycle` the update rules (the wording of
apimachinery's field errors: `kinds/fielderrors`).
"""
