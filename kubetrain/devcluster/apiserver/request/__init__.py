"""What a request is about and what its body says, before any verb runs: the Target and a
write's Result (target.py), body decoding (decoding.py) and its repeated keys
(duplicates.py), patch bodies (patch.py) and label and field selectors (selectors.py)."""
