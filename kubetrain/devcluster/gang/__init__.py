"""The simulated gang scheduler (Volcano / scheduler-plugins) and its PodGroup CRDs."""
