"""The object store and its history: objects, resourceVersions and watch fan-out (store.py),
watch event lines encoded once (eventlines.py), history compaction (compaction.py) and
Event expiry (eventttl.py)."""
