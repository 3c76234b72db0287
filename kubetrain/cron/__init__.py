"""Scheduled training (TrainingCron, KubeDL's Cron) — pure: the schedule grammar (schedule.py),
the schedule arithmetic (times.py), one view of either layout and its validation (shape.py) and
the decision of each pass (decide.py). The controller that acts on it is operator/crons.py."""
