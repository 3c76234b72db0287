"""The controller: a pure planner (plan.py and its policies) and the asyncio loop that applies it."""
