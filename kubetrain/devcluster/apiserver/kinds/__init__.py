"""The kinds of object served and their rules, independent of requests and storage: the
resource registry (resources.py), object metadata (meta.py, objectmeta.py), built-in kinds'
defaulting and validation (builtins.py with configdata.py, coordination.py, eventrules.py,
pvcs.py; their fields, builtinschema.py), custom resources' structural schemas and Scale
view (schema.py, scales.py) and CustomResourceDefinition validation (crds/)."""
