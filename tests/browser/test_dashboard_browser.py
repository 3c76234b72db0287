"""The dashboard in a real browser: the list, a restarted job's Gantt bars, a live state change,
the inline field errors of a bad manifest, RBAC, and pages with JavaScript off."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from jobs import job
from playwright.async_api import expect

from kubetrain.api.labels import LABEL_JOB_NAME
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dashboard.views.kinds import served_kinds
from kubetrain.kube.asuser import anonymous_client
from kubetrain.kube.resources import PODS, job_resource

from .conftest import SHOTS, PageFactory, Scene, until

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_the_list_shows_every_job_with_its_state_and_counts(scene: Scene, page_as: PageFactory) -> None:
    page = await page_as(scene.admin)
    await page.goto(scene.url("/"))
    rows = page.locator("table.jobs tbody tr")
    await expect(rows).to_have_count(5)
    await expect(page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/llm-eval"] .state')).to_have_text(
        "Suspended"
    )
    await expect(page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-b/secret-project"]')).to_have_count(
        1
    )
    await page.select_option("select[name=namespace]", "team-a")
    await page.click("form.filters button[type=submit]")
    await expect(rows).to_have_count(4)
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / "dashboard-list.png"), full_page=True)
    assert page.errors == []  # type: ignore[attr-defined]


async def test_a_user_without_rbac_for_a_namespace_sees_none_of_its_jobs(
    scene: Scene, page_as: PageFactory
) -> None:
    page = await page_as(scene.alice)
    await page.goto(scene.url("/"))
    await expect(page.locator("table.jobs tbody tr")).to_have_count(4)
    # the header names the user the token is (a SelfSubjectReview), never the token
    await expect(page.locator("header .who")).to_contain_text("system:serviceaccount:team-a:alice")
    assert scene.alice not in await page.content()
    await expect(page.locator("text=secret-project")).to_have_count(0)
    await expect(page.locator("select[name=namespace] option", has_text="team-b")).to_have_count(0)
    await page.goto(scene.url("/namespaces/team-b/pytorchjobs/secret-project"))
    await expect(page.locator("h1")).to_contain_text("secret-project")
    await expect(page.locator(".error-message")).to_contain_text("forbidden")


async def test_a_restarted_pod_has_its_own_bars_with_the_exit_code(
    scene: Scene, page_as: PageFactory
) -> None:
    page = await page_as(scene.alice)
    await page.goto(scene.url("/namespaces/team-a/pytorchjobs/mnist-ddp"))
    row = page.locator('.gantt text.row[data-slot="worker-1"]')
    bars = (await row.get_attribute("data-bars") or "").split(";")
    states = [b.split()[2] for b in bars]
    # the failed run, then its replacement running — with a pending bar between them when the
    # replacement took a second or more to start (timestamps have seconds; a busy machine)
    assert "failed" in states
    last_failed = max(i for i, state in enumerate(states) if state == "failed")
    assert states[last_failed + 1 :] in (["running"], ["pending", "running"]), states
    lines = (await row.locator("title").text_content() or "").split("\n")
    assert len(lines) == len(bars)
    failed = lines[last_failed]
    assert "exit code 137 (OOMKilled)" in failed and "JobRestarting" in failed and "recreating" in failed
    worker0 = await page.locator('.gantt text.row[data-slot="worker-0"]').get_attribute("data-bars")
    assert worker0 is not None and "failed" not in worker0
    # one tooltip for the whole chart: pointing at the failed bar shows its line
    x, width, _ = bars[last_failed].split()
    await row.scroll_into_view_if_needed()
    svg_box = await row.locator("xpath=ancestor::*[local-name()='svg'][1]").bounding_box()
    row_box = await row.bounding_box()
    assert svg_box is not None and row_box is not None
    await page.mouse.move(svg_box["x"] + float(x) + float(width) / 2, row_box["y"] + row_box["height"] / 2)
    await expect(page.locator(".gantt-tip")).to_contain_text("exit code 137 (OOMKilled)")
    await expect(page.locator("rect.gantt-hover")).to_have_count(1)
    await expect(page.locator("#events")).to_contain_text("exited with code 137")
    await expect(page.locator("#log")).to_contain_text("MASTER_ADDR")
    plots = page.locator("#progress figure.plot")
    await expect(plots).to_have_count(3)  # progress, loss, accuracy
    await expect(plots.nth(0)).to_contain_text("progress 85%")
    await expect(page.locator("#progress")).to_contain_text("about 1m30s left")
    await expect(plots.nth(1).locator("path.plot-line")).to_have_count(1)
    await page.screenshot(path=str(SHOTS / "dashboard-job.png"), full_page=True)
    assert page.errors == []  # type: ignore[attr-defined]


async def test_a_state_change_appears_live_without_a_reload(scene: Scene, page_as: PageFactory) -> None:
    await scene.stack.apply(job("PyTorchJob", "live", {"Master": 1}, namespace="team-a"))
    page = await page_as(scene.alice)
    await page.goto(scene.url("/namespaces/team-a/pytorchjobs/live"))
    await expect(page.locator("#live-status")).to_be_visible()
    await expect(page.locator("#job-state")).to_have_text("Running")
    await page.evaluate("window.__notReloaded = true")
    await scene.stack.kube.patch(
        job_resource("PyTorchJob"), "team-a", "live", {"spec": {"runPolicy": {"suspend": True}}}
    )
    await expect(page.locator("#job-state")).to_have_text("Suspended", timeout=10_000)
    assert await page.evaluate("window.__notReloaded === true")
    # and in the list
    list_page = await page_as(scene.alice)
    await list_page.goto(scene.url("/?namespace=team-a"))
    await scene.stack.kube.patch(
        job_resource("PyTorchJob"), "team-a", "live", {"spec": {"runPolicy": {"suspend": False}}}
    )
    cell = list_page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/live"] .state')
    await expect(cell).not_to_have_text("Suspended", timeout=10_000)


async def test_a_change_between_the_render_and_the_stream_opening_is_not_lost(
    scene: Scene, page_as: PageFactory
) -> None:
    """The page is rendered, then its live stream connects: a change in between reaches the page
    (the stream starts where the page was rendered and replays what came after). The stream's
    request is held until the server renders the change."""
    await scene.stack.apply(job("PyTorchJob", "gap", {"Master": 1}, namespace="team-a"))
    page = await page_as(scene.alice)
    held, release = asyncio.Event(), asyncio.Event()

    async def hold(route: Any) -> None:
        held.set()
        await release.wait()
        await route.continue_()

    await page.route("**/stream?**", hold)
    url = scene.url("/namespaces/team-a/pytorchjobs/gap")

    def served(state: str) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:  # the dashboard's own watch has the job in this state
            html = await (await page.request.get(url)).text()
            return f'state-{state.lower()}" id="job-state">{state}<' in html

        return check

    # Rendered once the job runs: the held stream cannot bring a later state to the page.
    await until(served("Running"))
    await page.goto(url)
    await expect(page.locator("#job-state")).to_have_text("Running")
    await asyncio.wait_for(held.wait(), 10)
    await scene.stack.kube.patch(
        job_resource("PyTorchJob"), "team-a", "gap", {"spec": {"runPolicy": {"suspend": True}}}
    )
    await until(served("Suspended"))
    await expect(page.locator("#job-state")).to_have_text("Running")  # nothing streamed it yet
    release.set()
    await expect(page.locator("#job-state")).to_have_text("Suspended", timeout=10_000)
    assert page.errors == []  # type: ignore[attr-defined]


async def test_a_bad_manifest_shows_the_webhooks_field_errors_inline(
    scene: Scene, page_as: PageFactory
) -> None:
    page = await page_as(None)  # signs in through the login form
    await page.goto(scene.url("/submit"))
    await page.fill("input[name=token]", scene.alice)
    await page.click("form.login button")
    await expect(page.locator("h1")).to_have_text("Training jobs")
    await page.goto(scene.url("/submit"))
    bad = job("PyTorchJob", "typo", {"Master": 2}, namespace="team-a")
    bad["spec"]["runPolicy"] = {"backoffLimit": -1}
    await page.fill("textarea[name=manifest]", json.dumps(bad, indent=2))
    await page.click("button[value=create]")
    errors = page.locator("#field-errors")
    await expect(errors).to_be_visible()
    await expect(errors.locator("li")).to_have_count(3)  # the denial, then one line per field
    await expect(errors.locator("code.field")).to_have_text(
        ["spec.runPolicy.backoffLimit", "spec.pytorchReplicaSpecs[Master].replicas"]
    )
    await expect(page.locator("textarea[name=manifest]")).to_have_attribute("aria-invalid", "true")
    await page.screenshot(path=str(SHOTS / "dashboard-submit.png"), full_page=True)
    stored = await scene.stack.kube.list(job_resource("PyTorchJob"), "team-a")
    assert "typo" not in [j["metadata"]["name"] for j in stored["items"]]


async def test_pages_and_filters_work_with_javascript_off(scene: Scene, page_as: PageFactory) -> None:
    page = await page_as(scene.admin, javascript=False)
    await page.goto(scene.url("/"))
    await page.select_option("select[name=state]", "Failed")
    await page.click("form.filters button[type=submit]")
    await expect(page.locator("table.jobs tbody tr")).to_have_count(1)
    await expect(page.locator("table.jobs tbody")).to_contain_text("bert-finetune")
    await page.click("text=bert-finetune")
    await expect(page.locator("#job-state")).to_have_text("Failed")
    await expect(page.locator("path.bar.failed")).to_have_count(1)


async def test_a_job_restarted_before_the_dashboard_started_shows_its_earlier_bars(
    scene: Scene, page_as: PageFactory
) -> None:
    stack = scene.stack
    await stack.apply(
        job("PyTorchJob", "before", {"Worker": 2}, namespace="team-a", restart_policy="ExitCode")
    )

    async def pods(phase: str) -> list[dict[str, Any]]:
        found = await stack.kube.list(PODS, "team-a", label_selector=f"{LABEL_JOB_NAME}=before")
        return [p for p in found["items"] if p["status"].get("phase") == phase]

    await until(lambda: _count(pods("Running"), 2))
    first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await pods("Running")}
    await asyncio.sleep(1.0)  # a visible first run
    assert stack.simulator is not None
    await stack.simulator.finish("team-a", "before-worker-1", exit_code=137, reason="OOMKilled")

    async def replaced() -> bool:
        now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await pods("Running")}
        return "before-worker-1" in now and now["before-worker-1"] != first["before-worker-1"]

    await until(replaced)
    # A dashboard started only now has seen neither the failed pod nor its deletion.
    user_base = await anonymous_client(stack.cluster.kubeconfig_path)
    late = DashboardServer(stack.kube, user_base, served_kinds(["kubetrain.io"]), port=0)
    await late.start()
    page = await page_as(scene.alice)
    try:
        await page.goto(late.url.rstrip("/") + "/namespaces/team-a/pytorchjobs/before")
        row = page.locator('.gantt text.row[data-slot="worker-1"]')
        states = [b.split()[2] for b in (await row.get_attribute("data-bars") or "").split(";")]
        assert states[0] == "failed" and states[-1] == "running", states
        lines = (await row.locator("title").text_content() or "").split("\n")
        assert "start estimated" in lines[0] and "exit code 137" in lines[0] and "recreating" in lines[0]
        worker0 = await page.locator('.gantt text.row[data-slot="worker-0"]').get_attribute("data-bars")
        assert worker0 is not None and "failed" not in worker0
        await expect(page.locator("#live-status")).to_be_visible()  # its live-update stream is open
    finally:
        # a stopping dashboard ends open streams rather than waiting (60 s) for browsers to leave
        await asyncio.wait_for(late.stop(), 10)
        await page.close()
        await user_base.close()


async def _count(found: Awaitable[list[dict[str, Any]]], want: int) -> bool:
    return len(await found) == want


async def test_a_crash_looping_pod_reads_crashloopbackoff_with_the_back_off_and_restarts(
    scene: Scene, page_as: PageFactory
) -> None:
    """A container that keeps exiting under restartPolicy OnFailure: the pod stays Running, but
    its row says CrashLoopBackOff with the kubelet's back-off message and the restart count —
    arriving live on a page opened before, and the same on a page rendered with JavaScript off."""
    crashing = {"sim.kubetrain.io/run-seconds": "0.5", "sim.kubetrain.io/exit-code": "1"}
    await scene.stack.apply(
        job(
            "PyTorchJob",
            "flaky",
            {"Master": 1},
            namespace="team-a",
            restart_policy="OnFailure",
            template_metadata={"annotations": crashing},
        )
    )
    page = await page_as(scene.alice)
    await page.goto(scene.url("/namespaces/team-a/pytorchjobs/flaky"))
    await expect(page.locator("#live-status")).to_be_visible()
    await page.evaluate("window.__notReloaded = true")
    row = page.locator('#pod-table tr[data-pod="flaky-master-0"]')
    # at once after the first exit, then the back-off: 10 s before the third run
    await expect(row.locator(".podstate")).to_have_text("CrashLoopBackOff", timeout=15_000)
    assert await page.evaluate("window.__notReloaded === true")
    await expect(row.locator("td.why")).to_contain_text("back-off 10s restarting failed container=")
    await expect(row.locator("td").nth(3)).to_have_text("1")  # restarts
    await expect(row.locator("td").nth(1)).to_have_text("0/1")  # ready
    await expect(page.locator("#pod-counts")).to_have_text("1 CrashLoopBackOff")
    # the slot's last bar is the wait since the last exit, open, saying why
    slot = page.locator('.gantt text.row[data-slot="master-0"]')
    title = await slot.locator("title").text_content() or ""
    assert "CrashLoopBackOff: back-off 10s" in title.split("\n")[-1], title
    bars = (await slot.get_attribute("data-bars") or "").split(";")
    assert [b.split()[2] for b in bars][-2:] == ["failed", "pending"], bars
    await page.screenshot(path=str(SHOTS / "dashboard-crashloop.png"), full_page=True)
    assert page.errors == []  # type: ignore[attr-defined]

    static = await page_as(scene.alice, javascript=False)
    await static.goto(scene.url("/namespaces/team-a/pytorchjobs/flaky"))
    static_row = static.locator('#pod-table tr[data-pod="flaky-master-0"]')
    await expect(static_row.locator(".podstate")).to_have_text("CrashLoopBackOff")
    await expect(static_row.locator("td.why")).to_contain_text("back-off 10s restarting failed container=")


async def test_the_list_says_which_jobs_have_pods_not_working_live_and_without_javascript(
    scene: Scene, page_as: PageFactory
) -> None:
    """A job whose pods crash-loop: on a list page opened before, its row comes to read
    CrashLoopBackOff (marked, without a reload); the "pods not working" link keeps it and drops
    the jobs whose pods all work; with JavaScript off the same link and `sort=pods` work."""
    page = await page_as(scene.alice)
    await page.goto(scene.url("/?namespace=team-a"))
    await expect(page.locator("#live-status")).to_be_visible()
    healthy = page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/mnist-ddp"] td.pods')
    await expect(healthy).to_have_text("4 Running")
    await page.evaluate("window.__notReloaded = true")
    crashing = {"sim.kubetrain.io/run-seconds": "0.5", "sim.kubetrain.io/exit-code": "1"}
    await scene.stack.apply(
        job(
            "PyTorchJob",
            "crashy",
            {"Master": 1, "Worker": 1},
            namespace="team-a",
            restart_policy="OnFailure",
            template_metadata={"annotations": crashing},
        )
    )
    row = page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/crashy"]')
    await expect(row.locator("td.pods")).to_have_text("2 CrashLoopBackOff", timeout=20_000)
    await expect(row.locator("td.pods .podcount.tone-bad")).to_have_count(1)
    await expect(row).to_have_class("pods-failing")
    await expect(row.locator("td.pods")).to_have_attribute(
        "title", re.compile(r"^[12] of 2 pods not working$")
    )
    assert await page.evaluate("window.__notReloaded === true")
    await page.screenshot(path=str(SHOTS / "dashboard-list-pods.png"), full_page=True)
    await page.click("ul.counts a.pods-not-working")
    await expect(page).to_have_url(scene.url("/?namespace=team-a&pods=not-working"))
    await expect(row).to_have_count(1)
    await expect(page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/mnist-ddp"]')).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]

    static = await page_as(scene.alice, javascript=False)
    await static.goto(scene.url("/?namespace=team-a"))
    await static.click("ul.counts a.pods-not-working")
    static_row = static.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/crashy"]')
    await expect(static_row.locator("td.pods")).to_contain_text("CrashLoopBackOff")
    await expect(static.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/llm-eval"]')).to_have_count(0)
    await static.goto(scene.url("/?namespace=team-a&sort=pods"))
    first = static.locator("table.jobs tbody tr").first
    await expect(first.locator("td.pods .podcount.tone-bad")).not_to_have_count(0)
    await expect(static.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/llm-eval"]')).to_have_count(1)
