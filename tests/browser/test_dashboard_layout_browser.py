"""The dashboard's layout as a user sees it, asserted on layout facts (never pixels): at a phone's
width (390 px) no page scrolls sideways and the header fits; a long job name or image wraps inside
its cell, a pod's name never breaks (at 768 px, beside a long Why); every time on a page reads
alike (UTC, `2026-01-02 03:04:05Z`); an empty list, a pod with no log yet and a single bar say so
in words."""

from __future__ import annotations

import re

import pytest
from jobs import job
from playwright.async_api import expect

from kubetrain.kube.resources import PODS, job_resource

from .conftest import LONG_IMAGE, LONG_NAME, SHOTS, PageFactory, Scene, sideways, sim, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$")
PHONE = 390


async def test_no_page_scrolls_sideways_on_a_phone(crowded: Scene, page_as: PageFactory) -> None:
    pages = [
        "/",
        "/?namespace=team-a&sort=name&order=asc",
        "/namespaces/team-a/pytorchjobs/mnist-ddp",
        f"/namespaces/team-a/pytorchjobs/{LONG_NAME}",
        "/namespaces/team-a/pytorchjobs/gang-wait",
        "/namespaces/team-a/pytorchjobs/bert-finetune",
        "/namespaces/team-a/pytorchjobs/llm-eval/delete",
        "/namespaces/team-a/pytorchjobs/no-such-job",
        "/submit",
    ]
    page = await page_as(crowded.admin, width=PHONE)
    for path in pages:
        await page.goto(crowded.url(path))
        await expect(page.locator("main h1")).to_be_visible()
        assert await sideways(page) <= 0, f"{path} scrolls sideways at {PHONE} px"
        header = await page.evaluate(
            "(() => { const h = document.querySelector('header.top');"
            " return [h.scrollWidth, h.clientWidth, h.getBoundingClientRect().right]; })()"
        )
        assert header[0] <= header[1] and header[2] <= PHONE, (path, header)
    # the job list is a card a job on a phone (tests/browser/test_dashboard_phone_browser.py)
    await page.goto(crowded.url("/"))
    box = page.locator("#jobs .table-scroll")
    assert await box.evaluate("b => b.scrollWidth <= b.clientWidth")
    await page.screenshot(path=str(SHOTS / "dashboard-list-phone.png"), full_page=True)
    # a refused manifest's field errors fit too
    await page.goto(crowded.url("/submit"))
    await page.fill(
        "textarea[name=manifest]",
        "apiVersion: kubetrain.io/v1\nkind: PyTorchJob\nmetadata: {name: bad, namespace: team-a}\n"
        "spec: {pytorchReplicaSpecs: {Worker: {replicas: -1, template: {spec: {containers: "
        "[{name: pytorch, image: x}]}}}}}\n",
    )
    await page.click("button[value=dryrun]")
    await expect(page.locator("#field-errors")).to_be_visible()
    assert await sideways(page) <= 0


async def test_a_long_name_and_image_wrap_inside_their_cells(crowded: Scene, page_as: PageFactory) -> None:
    page = await page_as(crowded.admin)
    await page.goto(crowded.url("/?namespace=team-a"))
    name_cell = page.locator(f'tr[data-job="pytorchjobs.kubetrain.io/team-a/{LONG_NAME}"] td.name')
    await expect(name_cell).to_have_text(LONG_NAME)
    inside = (
        "c => { const a = c.firstElementChild.getBoundingClientRect(), b = c.getBoundingClientRect();"
        " return a.left >= b.left && a.right <= b.right; }"
    )
    assert await name_cell.evaluate(inside)
    # the Created column is never broken between the date and the time
    created = page.locator(f'tr[data-job="pytorchjobs.kubetrain.io/team-a/{LONG_NAME}"] td.time')
    assert (
        await created.evaluate(
            "c => { const r = document.createRange(); r.selectNodeContents(c);"
            " return r.getClientRects().length; }"
        )
        == 1
    )
    # nor a replica type from its count (`Worker 2/2`), nor a progress bar from its percentage
    row = page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/mnist-ddp"]')
    for part in await row.locator("td span.nowrap").all():
        assert await part.evaluate("s => s.getClientRects().length") == 1, await part.text_content()
    await expect(row.locator("td span.nowrap")).to_have_text(["Master 1/1", "Worker 3/3"])
    await page.goto(crowded.url(f"/namespaces/team-a/pytorchjobs/{LONG_NAME}"))
    image = page.locator("table.replicas td code").first
    await expect(image).to_have_text(LONG_IMAGE)
    assert await image.evaluate(
        "c => { const a = c.getBoundingClientRect(), b = c.parentElement.getBoundingClientRect();"
        " return a.right <= b.right + 0.5; }"
    )
    assert await sideways(page) <= 0


async def test_every_time_reads_alike_in_utc(crowded: Scene, page_as: PageFactory) -> None:
    page = await page_as(crowded.admin)
    await page.goto(crowded.url("/?namespace=team-a"))
    times = await page.locator("table.jobs td.time").all_text_contents()
    assert times and all(TIME.match(t) for t in times), times
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/bert-finetune"))
    created = page.locator("dl.summary dt", has_text="created").locator("xpath=following-sibling::dd[1]")
    assert TIME.match(await created.text_content() or ""), await created.text_content()
    events = await page.locator("table.events tbody td.time").all_text_contents()
    assert events and all(TIME.match(t) for t in events), events
    conditions = await page.locator("ol.timeline time").all_text_contents()
    assert conditions and all(TIME.match(t) for t in conditions), conditions


async def test_empty_states_say_so_in_words(crowded: Scene, page_as: PageFactory) -> None:
    page = await page_as(crowded.admin)
    await page.goto(crowded.url("/?namespace=nobody-here"))
    await expect(page.locator("table.jobs tbody td.empty")).to_have_text(
        "No jobs in nobody-here that you may list."
    )
    # one failed pod: one row, in the singular; its run is one bar, plus a pending bar when the
    # pod started in a later second than it was created (timestamps have one-second resolution)
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/bert-finetune"))
    drawn = await page.locator("#pods text.row").get_attribute("data-bars")
    assert drawn is not None
    states = [bar.split()[-1] for bar in drawn.split(";")]
    assert states in (["failed"], ["pending", "failed"]), states
    wording = "1 bar in 1 row." if len(states) == 1 else "2 bars in 1 row."
    await expect(page.locator("#pods")).to_contain_text(wording)
    # a pod waiting for GPUs has written nothing: the log box says so rather than stay blank
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/gang-wait"))
    # and its container is offered already (from the pod's spec: it has no container status yet)
    await expect(page.locator("select[name=container] option")).to_have_text(["pytorch"])
    log = page.locator("pre#log")
    await expect(log).to_have_text("")
    before = await log.evaluate("l => getComputedStyle(l, '::before').content")
    assert before == '"No log lines yet."', before


async def test_a_page_that_is_not_there_is_the_error_page_with_a_way_back(
    crowded: Scene, page_as: PageFactory
) -> None:
    page = await page_as(crowded.admin)
    response = await page.goto(crowded.url("/nowhere"))
    assert response is not None and response.status == 404
    await expect(page.locator("main h1")).to_have_text("Page not found")
    await expect(page.locator(".error-message")).to_have_text("There is no dashboard page at /nowhere.")
    await expect(page.locator("header.top .who")).to_contain_text("kubetrain-admin")
    await page.click("text=Back to the job list")
    await expect(page.locator("main h1")).to_have_text("Training jobs")
    await page.goto(crowded.url("/namespaces/team-a/widgets/x"))
    await expect(page.locator(".error-message")).to_contain_text("is not a served job resource (served:")


async def test_a_finished_index_whose_pod_is_gone_is_named_in_the_pod_table(
    crowded: Scene, page_as: PageFactory
) -> None:
    stack = crowded.stack
    # every Worker's pod succeeds and stays (the job succeeds with all of them, no pod is cleaned)
    shards = job(
        "TFJob",
        "shards",
        {"Worker": 3},
        namespace="team-a",
        template_metadata=sim(0.3),
        spec_extra={"successPolicy": "AllWorkers"},
        run_policy={"cleanPodPolicy": "None"},
    )
    await stack.apply(shards)

    async def all_finished() -> bool:
        got = await stack.kube.get(job_resource("TFJob"), "team-a", "shards")
        return bool((got.get("status") or {}).get("completedIndexes") == {"Worker": "0-2"})

    await until(all_finished)
    await stack.kube.delete(PODS, "team-a", "shards-worker-1")
    page = await page_as(crowded.admin)
    gone = page.locator('tr[data-gone="Worker 1"]')

    async def shown() -> bool:
        await page.goto(crowded.url("/namespaces/team-a/tfjobs/shards"))
        return await gone.count() == 1

    await until(shown)
    await expect(page.locator("#finished-indexes")).to_have_text("Worker: finished indexes 0\u20132 (3 of 3)")
    await expect(gone).to_contain_text("Worker 1 (no pod)")
    await expect(gone.locator(".podstate")).to_have_text("Finished")
    await expect(gone.locator("td.why")).to_contain_text("status.completedIndexes")
    # the indexes whose pod is still there have their pod's row, not a gone one
    await expect(page.locator("tr[data-gone]")).to_have_count(1)
    await expect(page.locator('tr[data-pod="shards-worker-0"]')).to_have_count(1)


def luminance(rgb: str) -> float:
    """The relative luminance (WCAG) of a computed `rgb(r, g, b)` colour."""
    parts = [int(x) / 255 for x in re.findall(r"\d+", rgb)[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


STYLE = "e => { const s = getComputedStyle(e); return [s.color, s.backgroundColor]; }"


async def test_the_dark_scheme_follows_the_system_and_keeps_text_readable(
    crowded: Scene, page_as: PageFactory
) -> None:
    light = await page_as(crowded.admin)
    await light.goto(crowded.url("/"))
    assert await light.locator("body").evaluate(STYLE) == ["rgb(29, 35, 48)", "rgb(255, 255, 255)"]
    page = await page_as(crowded.admin, dark=True)
    pages = {
        "/?namespace=team-a": "dashboard-list-dark.png",
        "/namespaces/team-a/pytorchjobs/mnist-ddp": "dashboard-job-dark.png",
        "/submit": "dashboard-submit-dark.png",
    }
    for path, shot in pages.items():
        await page.goto(crowded.url(path))
        await expect(page.locator("main h1")).to_be_visible()
        fg, bg = await page.locator("body").evaluate(STYLE)
        assert luminance(bg) < 0.02 and luminance(fg) > 0.7, (path, fg, bg)
        if path == "/submit":  # a refused manifest: its field errors, on their own background
            await page.fill("textarea[name=manifest]", "kind: PyTorchJob\nmetadata: {name: x}\n")
            await page.click("button[value=dryrun]")
            errors = page.locator("#field-errors")
            fg, bg = await errors.evaluate(STYLE)
            assert contrast(fg, bg) >= 4.5, (fg, bg)
            fg, bg = await page.locator("textarea[name=manifest]").evaluate(STYLE)
            assert luminance(bg) < 0.02 and contrast(fg, bg) >= 4.5, (fg, bg)
        await page.screenshot(path=str(SHOTS / shot), full_page=path != "/?namespace=team-a")
    # the job page's badges, links and muted text on their own backgrounds (or the page's)
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/mnist-ddp"))
    _, page_bg = await page.locator("body").evaluate(STYLE)
    for selector in ("#job-state", ".podstate", "h1 .ns", "a.danger", "td.why", ".podcount"):
        for element in await page.locator(selector).all():
            fg, bg = await element.evaluate(STYLE)
            bg = page_bg if bg == "rgba(0, 0, 0, 0)" else bg
            assert contrast(fg, bg) >= 4.5, (selector, fg, bg)


TABLET = 768
LONG_POD_JOB = "hyperparam-sweep-learning-rate-0-001"


async def test_a_long_pod_name_stays_on_one_line_beside_a_long_why_at_768px(
    crowded: Scene, page_as: PageFactory
) -> None:
    # pods waiting for 64 GPUs each: every row carries the scheduler's long message (team-b, so
    # team-a's list stays as the other tests and the docs' images see it)
    await crowded.stack.apply(
        job(
            "PyTorchJob",
            LONG_POD_JOB,
            {"Master": 1, "Worker": 1},
            namespace="team-b",
            resources={"limits": {"nvidia.com/gpu": "64"}},
        )
    )
    page = await page_as(crowded.admin, width=TABLET)
    name = page.locator(f'tr[data-pod="{LONG_POD_JOB}-worker-0"] td').first
    why = page.locator(f'tr[data-pod="{LONG_POD_JOB}-worker-0"] td.why')

    async def waiting() -> bool:
        await page.goto(crowded.url(f"/namespaces/team-b/pytorchjobs/{LONG_POD_JOB}"))
        return len(await why.text_content() or "") > 60

    await until(waiting)
    await expect(name).to_have_text(f"{LONG_POD_JOB}-worker-0")
    lines = (
        "c => { const r = document.createRange(); r.selectNodeContents(c);"
        " return r.getClientRects().length; }"
    )
    assert await name.evaluate(lines) == 1, "the pod name breaks across lines"
    # the message wraps instead, and the page itself does not scroll sideways
    assert await why.evaluate(lines) > 1
    assert await sideways(page) <= 0
    # on a phone the row is a block and the name its title: it wraps there rather than run out
    await page.set_viewport_size({"width": PHONE, "height": 844})
    right = await name.evaluate(
        "c => { const r = document.createRange(); r.selectNodeContents(c);"
        " return r.getBoundingClientRect().right; }"
    )
    assert right <= PHONE, f"the pod name runs out of the window on a phone (right edge {right})"
    assert await sideways(page) <= 0
