"""The kubetrain web dashboard: every job at a glance, each pod's life as a timeline.

Layout (docs/architecture.md, "The dashboard"):

- `views/` — pure decisions: which kinds are listed (`kinds.py`), job list rows, filters, sorting
  and pagination (`joblist.py`), pod lives recorded from pod versions (`podhistory.py`), the
  Gantt chart and condition timeline (`timeline.py`), progress plots (`progress.py`), the YAML
  and spec summary (`jobpage.py`), credentials and CSRF tokens (`auth.py`);
- `userapi.py` — every API call made for a user, with that user's credentials, and the per-user
  access checks (SelfSubjectAccessReview, cached briefly);
- `watch.py` — the dashboard's shared informers (jobs and pods) feeding the job index, the pod
  histories and the live-update hub;
- `server.py`, `handlers.py`, `actions.py` — the aiohttp application: pages, actions, SSE.
"""
