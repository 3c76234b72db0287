"""One module per training framework; `registry` maps a job kind to its Framework."""
