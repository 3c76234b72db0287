"""The dashboard against devcluster with RBAC: what each user sees and may do, through the real
server (token mode), the real informers and the real operator.

alice may read and change PyTorchJobs in team-a only; the admin may do anything."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from dashboards import ROLE_BINDINGS, SERVICE_ACCOUNTS, grant_role, rbac_dashboard
from jobs import job

from kubetrain.api.labels import LABEL_JOB_NAME
from kubetrain.dashboard import pages
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.dashboard.web import DashboardConfig
from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import NAMESPACES, PODS, ResourceRef, job_resource

pytestmark = pytest.mark.asyncio(loop_scope="module")

PYTORCH = job_resource("PyTorchJob")


class Env:
    def __init__(self, stack: DevStack, server: DashboardServer, alice: str) -> None:
        self.stack = stack
        self.server = server
        self.alice = alice
        self.admin = stack.cluster.token

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "Accept": "text/html"}

    async def get(self, path: str, token: str) -> tuple[int, str]:
        url = self.server.url.rstrip("/") + path
        async with aiohttp.ClientSession() as session, session.get(url, headers=self.headers(token)) as resp:
            return resp.status, await resp.text()

    async def post(self, path: str, token: str, form: dict[str, str]) -> tuple[int, str, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                self.server.url.rstrip("/") + path,
                headers=self.headers(token),
                data=form,
                allow_redirects=False,
            ) as resp,
        ):
            return resp.status, await resp.text(), resp.headers.get("Location", "")

    async def csrf(self, path: str, token: str) -> str:
        status, text = await self.get(path, token)
        assert status == 200, text
        match = re.search(r'name="csrf" value="([0-9a-f]+)"', text)
        assert match, "no CSRF token in the page"
        return match.group(1)


async def grant_alice(stack: DevStack) -> str:
    for ns in ("team-a", "team-b"):
        await stack.kube.create(NAMESPACES, {"metadata": {"name": ns}})
    rules = [
        {
            "apiGroups": ["kubetrain.io"],
            "resources": ["pytorchjobs"],
            "verbs": ["get", "list", "watch", "patch", "delete", "create"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods", "pods/log", "events"],
            "verbs": ["get", "list", "watch"],
        },
    ]
    return await grant_role(stack, "team-a", "alice", "jobs", rules)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[Env]:
    async with rbac_dashboard() as (stack, server):
        yield Env(stack, server, await grant_alice(stack))


async def until(predicate: Any, seconds: float = 30.0) -> None:
    """Wait for an async predicate (checked every 50 ms) to hold; `seconds` is a hang guard."""
    for _ in range(int(seconds / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not true after {seconds} s: {predicate.__name__}")


async def create(env: Env, manifest: dict[str, Any]) -> dict[str, Any]:
    created = await env.stack.apply(manifest)

    async def listed() -> bool:
        key = ("kubetrain.io", "pytorchjobs", manifest["metadata"]["namespace"], manifest["metadata"]["name"])
        return key in env.server.watch.rows

    await until(listed)
    return created


async def test_a_user_sees_only_the_jobs_rbac_lets_them_list(env: Env) -> None:
    await create(env, job("PyTorchJob", "mine", {"Master": 1}, namespace="team-a"))
    await create(env, job("PyTorchJob", "theirs", {"Master": 1}, namespace="team-b"))
    status, page = await env.get("/", env.alice)
    assert status == 200
    assert "/namespaces/team-a/pytorchjobs/mine" in page
    assert "theirs" not in page and "team-b" not in page
    status, page = await env.get("/?namespace=team-b", env.alice)
    assert "theirs" not in page
    status, page = await env.get("/", env.admin)
    assert "/namespaces/team-a/pytorchjobs/mine" in page and "/namespaces/team-b/pytorchjobs/theirs" in page
    status, page = await env.get("/namespaces/team-b/pytorchjobs/theirs", env.alice)
    assert status == 403
    assert env.alice not in page


async def test_without_credentials_the_login_page_and_a_session_cookie(env: Env) -> None:
    # unsafe: keep cookies of an IP address (127.0.0.1), as browsers do
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        base = env.server.url.rstrip("/")
        async with session.get(base + "/", headers={"Accept": "text/html"}) as resp:
            text = await resp.text()
            assert resp.status == 200 and 'action="/login"' in text
            csp = resp.headers["Content-Security-Policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', text)
        assert csrf
        async with session.post(
            base + "/login", data={"token": "not-a-token", "csrf": csrf.group(1)}, allow_redirects=False
        ) as resp:
            assert resp.status == 401
        async with session.post(
            base + "/login", data={"token": env.alice, "csrf": csrf.group(1)}, allow_redirects=False
        ) as resp:
            assert resp.status == 303
            cookie = resp.headers["Set-Cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert env.alice not in cookie
        async with session.get(base + "/", headers={"Accept": "text/html"}) as resp:
            page = await resp.text()
            assert resp.status == 200 and "Training jobs" in page and env.alice not in page


async def test_a_restarted_pod_is_two_bars_with_the_exit_code(env: Env) -> None:
    await create(
        env,
        job("PyTorchJob", "flaky", {"Master": 1, "Worker": 1}, namespace="team-a", restart_policy="ExitCode"),
    )
    sim = env.stack.simulator
    assert sim is not None
    await sim.finish("team-a", "flaky-worker-0", exit_code=137)

    async def recreated() -> bool:
        pods = await env.stack.kube.list(PODS, "team-a", label_selector=f"{LABEL_JOB_NAME}=flaky")
        return any(
            p["metadata"]["name"] == "flaky-worker-0" and p["status"].get("phase") == "Running"
            for p in pods["items"]
        )

    await until(recreated)
    status, page = await env.get("/namespaces/team-a/pytorchjobs/flaky", env.alice)
    assert status == 200
    row = re.search(r'data-slot="worker-0" data-bars="([^"]*)">(.*?)</text>', page, re.S)
    assert row, page
    bars = [b.split()[2] for b in row.group(1).split(";")]
    assert "failed" in bars and bars[-1] == "running"
    assert "exit code 137" in row.group(2)


async def test_a_big_jobs_log_form_names_the_pod_in_a_text_field_with_suggestions(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past POD_SELECT_MAX pods, no <select> of every pod (the browser measures each option)."""
    await create(env, job("PyTorchJob", "biglog", {"Master": 1, "Worker": 1}, namespace="team-a"))

    async def two_pods() -> bool:
        pods = await env.stack.kube.list(PODS, "team-a", label_selector=f"{LABEL_JOB_NAME}=biglog")
        return len(pods["items"]) == 2

    await until(two_pods)
    path = "/namespaces/team-a/pytorchjobs/biglog"
    _, small = await env.get(path, env.alice)
    assert '<select name="pod">' in small and 'list="job-pods"' not in small
    monkeypatch.setattr(pages, "POD_SELECT_MAX", 1)
    _, big = await env.get(path + "?pod=biglog-worker-0", env.alice)
    assert '<select name="pod">' not in big
    assert re.search(r'<input name="pod" list="job-pods" value="biglog-worker-0"', big)
    suggested = re.search(r'<datalist id="job-pods">(.*?)</datalist>', big, re.S)
    assert suggested is not None
    assert sorted(re.findall(r'<option value="([^"]+)">', suggested.group(1))) == [
        "biglog-master-0",
        "biglog-worker-0",
    ]


async def test_actions_need_the_csrf_token_and_act_as_the_user(env: Env) -> None:
    await create(env, job("PyTorchJob", "pause", {"Master": 1}, namespace="team-a"))
    path = "/namespaces/team-a/pytorchjobs/pause"
    status, _, _ = await env.post(path + "/suspend", env.alice, {})
    assert status == 403
    csrf = await env.csrf(path, env.alice)
    status, _, location = await env.post(path + "/suspend", env.alice, {"csrf": csrf})
    assert status == 303 and location == path
    stored = await env.stack.kube.get(PYTORCH, "team-a", "pause")
    assert stored["spec"]["runPolicy"]["suspend"] is True
    # The admin's CSRF token is not alice's, and alice cannot act in team-b.
    admin_csrf = await env.csrf(path, env.admin)
    assert admin_csrf != csrf
    status, _, _ = await env.post("/namespaces/team-b/pytorchjobs/theirs/suspend", env.alice, {"csrf": csrf})
    assert status == 403
    status, _, location = await env.post(path + "/delete", env.alice, {"csrf": csrf, "confirm": "pause"})
    assert status == 303


async def test_submit_shows_the_webhooks_field_errors_before_creating(env: Env) -> None:
    csrf = await env.csrf("/submit", env.alice)
    bad = job("PyTorchJob", "bad", {"Worker": -1}, namespace="team-a")
    status, page, _ = await env.post(
        "/submit", env.alice, {"csrf": csrf, "manifest": json.dumps(bad), "action": "create"}
    )
    assert status == 422
    assert "field-errors" in page and "pytorchReplicaSpecs" in page
    assert await env.stack.kube.list(PYTORCH, "team-a") is not None
    names = [j["metadata"]["name"] for j in (await env.stack.kube.list(PYTORCH, "team-a"))["items"]]
    assert "bad" not in names
    good = job("PyTorchJob", "good", {"Master": 1}, namespace="team-a")
    status, page, _ = await env.post(
        "/submit", env.alice, {"csrf": csrf, "manifest": json.dumps(good), "action": "dryrun"}
    )
    assert status == 200 and "dry run passed" in page
    names = [j["metadata"]["name"] for j in (await env.stack.kube.list(PYTORCH, "team-a"))["items"]]
    assert "good" not in names
    status, _, location = await env.post(
        "/submit", env.alice, {"csrf": csrf, "manifest": json.dumps(good), "action": "create"}
    )
    assert status == 303 and location == "/namespaces/team-a/pytorchjobs/good"


async def test_live_updates_reach_only_users_who_may_list_the_job(env: Env) -> None:
    connected = [asyncio.Event(), asyncio.Event()]

    async def events(token: str, seen: list[dict[str, Any]], opened: asyncio.Event) -> None:
        async with (
            aiohttp.ClientSession() as session,
            session.get(env.server.url + "stream", headers={"Authorization": f"Bearer {token}"}) as resp,
        ):
            assert resp.status == 200
            opened.set()  # the stream subscribes to the changes before it answers
            async for line in resp.content:
                if line.startswith(b"data: {"):
                    seen.append(json.loads(line[6:]))

    alice_seen: list[dict[str, Any]] = []
    admin_seen: list[dict[str, Any]] = []
    tasks = [
        asyncio.create_task(events(env.alice, alice_seen, connected[0])),
        asyncio.create_task(events(env.admin, admin_seen, connected[1])),
    ]
    try:
        # Both streams are open (subscribed) before the jobs change: a hang guard, not a budget.
        await asyncio.wait_for(asyncio.gather(*(opened.wait() for opened in connected)), 30)
        await env.stack.apply(job("PyTorchJob", "live-b", {"Master": 1}, namespace="team-b"))
        await env.stack.apply(job("PyTorchJob", "live-a", {"Master": 1}, namespace="team-a"))

        async def both() -> bool:
            return any(e["name"] == "live-a" for e in alice_seen) and any(
                e["name"] == "live-b" for e in admin_seen
            )

        await until(both)
        assert not any(e["namespace"] == "team-b" for e in alice_seen)
    finally:
        for task in tasks:
            task.cancel()


CLUSTER_ROLES = ResourceRef("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)


async def test_proxy_mode_acts_as_the_forwarded_user_by_impersonation(env: Env, tmp_path: Any) -> None:
    """The chart's proxy-mode rights: list/watch jobs and pods, impersonate users and groups."""
    kube, cluster = env.stack.kube, env.stack.cluster
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": "dashboard"}}, namespace="default")
    rules = [
        {"apiGroups": ["kubetrain.io"], "resources": ["pytorchjobs"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]},
    ]
    await kube.create(CLUSTER_ROLES, {"metadata": {"name": "dashboard"}, "rules": rules})
    binding = {
        "metadata": {"name": "dashboard"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "dashboard"},
        "subjects": [{"kind": "ServiceAccount", "name": "dashboard", "namespace": "default"}],
    }
    await kube.create(CLUSTER_ROLE_BINDINGS, binding)
    bob = {
        "metadata": {"name": "bob-jobs"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jobs"},
        "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}],
    }
    await kube.create(ROLE_BINDINGS, bob, namespace="team-a")
    await create(env, job("PyTorchJob", "for-bob", {"Master": 1}, namespace="team-a"))
    token = cluster.add_service_account_token("default", "dashboard")
    path = cluster.write_token_kubeconfig(str(tmp_path / "dashboard"), token)
    server = await DashboardServer.connect(
        path, served_kinds(["kubetrain.io"]), config=DashboardConfig(auth_mode="proxy"), port=0
    )
    try:
        await server.start()
        base = server.url.rstrip("/")
        async with aiohttp.ClientSession() as session:
            headers = {"X-Forwarded-User": "bob", "X-Forwarded-Groups": "ml", "Accept": "text/html"}
            async with session.get(base + "/", headers=headers) as resp:
                page = await resp.text()
                assert resp.status == 200
                assert "/namespaces/team-a/pytorchjobs/for-bob" in page and "team-b" not in page
            async with session.get(base + "/namespaces/team-b/pytorchjobs/theirs", headers=headers) as resp:
                assert resp.status == 403
            async with session.get(base + "/namespaces/team-a/pytorchjobs/for-bob", headers=headers) as resp:
                assert resp.status == 200 and "for-bob" in await resp.text()
            async with session.get(base + "/", headers={"Accept": "text/html"}) as resp:
                assert resp.status == 401  # no identity forwarded: nobody to act as
    finally:
        await server.stop()


async def test_pods_and_logs_follow_the_users_rights(env: Env) -> None:
    kube = env.stack.kube
    rules = [{"apiGroups": ["kubetrain.io"], "resources": ["pytorchjobs"], "verbs": ["get", "list"]}]
    carol = await grant_role(env.stack, "team-a", "carol", "jobs-only", rules)
    await create(env, job("PyTorchJob", "watched", {"Master": 1}, namespace="team-a"))

    async def running() -> bool:
        pods = await kube.list(PODS, "team-a", label_selector=f"{LABEL_JOB_NAME}=watched")
        return any(p["status"].get("phase") == "Running" for p in pods["items"])

    await until(running)
    status, page = await env.get("/namespaces/team-a/pytorchjobs/watched", carol)
    assert status == 200
    assert "forbidden: you may not list pods in namespace &#34;team-a&#34;" in page
    assert 'data-slot="master-0"' not in page
    status, page = await env.get("/namespaces/team-a/pytorchjobs/watched", env.alice)
    assert 'data-slot="master-0"' in page and "MASTER_ADDR" in page  # alice may: chart and log tail

    url = env.server.url + "namespaces/team-a/pytorchjobs/watched/logs/watched-master-0/follow"
    async with aiohttp.ClientSession() as session:
        async with session.get(url, headers={"Authorization": f"Bearer {carol}"}) as resp:
            assert resp.status == 403  # carol may not get the pod
        lines: list[str] = []
        async with session.get(url, headers={"Authorization": f"Bearer {env.alice}"}) as resp:
            assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
            async for raw in resp.content:
                if raw.startswith(b"data: "):
                    lines.append(json.loads(raw[6:]))
                if any(line.startswith("MASTER_ADDR=") for line in lines):
                    break
        assert lines[0].startswith("devcluster: container")
