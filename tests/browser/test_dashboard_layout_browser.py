"""The dashboard's layout as a user sees it, asserted on layout facts (never pixels): at a phone's
width (390 px) no page scrolls sideways — a wide table scrolls inside its own box — and the header
fits; a long job name or image wraps inside its cell; every time on a page reads alike (UTC,
`2026-01-02 03:04:05Z`); an empty list, a pod with no log yet and a single bar say so in words."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from jobs import job
from playwright.async_api import Page, expect

from .conftest import SHOTS, PageFactory, Scene

pytestmark = pytest.mark.asyncio(loop_scope="module")

LONG_NAME = "very-long-experiment-name-for-hyperparam-sweep-7"
LONG_IMAGE = (
    "registry.example.com/research/very-deep-learning/pytorch-training-image-with-cuda-12:"
    "2026.11.27-abcdef0123456789"
)
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$")
PHONE = 390


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def crowded(scene: Scene) -> AsyncIterator[Scene]:
    """The scene plus a job with a long name and image, and one whose pods wait for 64 GPUs each
    (pending, with the scheduler's long message on every pod row)."""
    await scene.stack.apply(
        job("PyTorchJob", LONG_NAME, {"Master": 1, "Worker": 2}, namespace="team-a", image=LONG_IMAGE)
    )
    await scene.stack.apply(
        job(
            "PyTorchJob",
            "gang-wait",
            {"Master": 1, "Worker": 2},
            namespace="team-a",
            resources={"limits": {"nvidia.com/gpu": "64"}},
        )
    )
    yield scene


async def sideways(page: Page) -> int:
    """How many pixels the page scrolls sideways (0: none)."""
    width: int = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    return width


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
    # the job table is wider than a phone: it scrolls inside its own box, every column reachable
    await page.goto(crowded.url("/"))
    box = page.locator("#jobs .table-scroll")
    assert await box.evaluate("b => b.scrollWidth > b.clientWidth && getComputedStyle(b).overflowX") == "auto"
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
    # one failed pod: one bar in one row, in the singular
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/bert-finetune"))
    await expect(page.locator("#pods")).to_contain_text("1 bar in 1 row.")
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
