"""Issue 28's acceptance in a real browser: a new user runs the README's dev command (`kubetrain
dev`, its default example), opens the printed URL and sees the example job's pods as a timeline,
its logs and events, and a progress plot — the progress its rank-0 pod reports through the
training-progress endpoint (played by the simulated kubelet), updating live."""

from __future__ import annotations

import re

import pytest
from devrun import dev_dashboard
from playwright.async_api import expect

from .conftest import SHOTS, PageFactory

pytestmark = pytest.mark.asyncio(loop_scope="module")

JOB_PAGE = "namespaces/default/pytorchjobs/pytorch-ddp"


async def test_the_dev_example_shows_its_timeline_logs_events_and_a_live_progress_plot(
    page_as: PageFactory,
) -> None:
    async with dev_dashboard(["--timeout", "90"]) as (url, _, stop):  # the README's command
        page = await page_as(None)  # on loopback the dashboard acts as the kubeconfig's user
        await page.goto(url)
        await page.click('a[href="/namespaces/default/pytorchjobs/pytorch-ddp"]')
        await expect(page.locator("h1")).to_contain_text("pytorch-ddp")
        for slot in ("master-0", "worker-0", "worker-2"):  # the Gantt chart: one row per pod, running now
            row = page.locator(f'.gantt text.row[data-slot="{slot}"]')
            await expect(row).to_have_attribute("data-bars", re.compile(r"(^|;)\S+ \S+ running[^;]*$"))
        await expect(page.locator("#log")).to_contain_text("MASTER_ADDR")
        await expect(page.locator("#events")).to_contain_text("started reporting progress")

        plots = page.locator("#progress figure.plot")
        await expect(plots).to_have_count(3)  # progress, loss, step — what the example reports
        await expect(plots.nth(1)).to_contain_text("loss")
        # The next reports (every 5 s) arrive live: the plot moves past 0 % without a reload.
        await expect(plots.nth(0)).to_contain_text(re.compile(r"progress (4\d|8\d)%"), timeout=15_000)
        await expect(page.locator("#progress")).to_contain_text("left")
        path = await plots.nth(0).locator("path.plot-line").get_attribute("d")
        assert path is not None and " L" in path  # a line through more than one report
        SHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SHOTS / "dashboard-dev-example.png"), full_page=True)
        assert page.errors == []  # type: ignore[attr-defined]

        # Ctrl-C with the page (its live-update stream) still open
        assert await stop() < 15, "kubetrain dev hangs on its open dashboard streams"
