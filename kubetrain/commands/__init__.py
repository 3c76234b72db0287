"""`kubetrain` sub-commands, one module each (see kubetrain/cli.py)."""
