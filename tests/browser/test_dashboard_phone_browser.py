"""The dashboard on a phone, a tablet and a desktop, asserted on layout facts (never pixels): at
390 px the job list is a card a job — its name and state inside the window, nothing scrolling
sideways, the live update still changing a card — at 768 px the cards sit two abreast, at 1360 px
it is the table; a job page's pod table is a block a pod on a phone, its spec a field's name
over its value; every field, button and link a phone user taps is 24 px tall or more; and an
exit code drawn on a Gantt bar reads at 4.5:1 or more on every bar colour, open or not, in both
colour schemes (from computed styles)."""

from __future__ import annotations

import pytest
from jobs import job
from playwright.async_api import Page, expect

from kubetrain.kube.resources import job_resource

from .conftest import PageFactory, Scene, sideways
from .test_dashboard_layout_browser import contrast

pytestmark = pytest.mark.asyncio(loop_scope="module")

PHONE, TABLET, DESKTOP = 390, 768, 1360
INSIDE = (
    "e => { const r = e.getBoundingClientRect();"
    " return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; }"
)


async def test_the_job_list_is_a_card_a_job_on_a_phone_and_stays_live(
    crowded: Scene, page_as: PageFactory
) -> None:
    for dark in (False, True):
        page = await page_as(crowded.admin, width=PHONE, dark=dark)
        await page.goto(crowded.url("/"))
        await expect(page.locator("#live-status")).to_be_visible()
        assert await sideways(page) <= 0
        box = page.locator("#jobs .table-scroll")
        assert await box.evaluate("b => b.scrollWidth <= b.clientWidth")
        await expect(page.locator("table.jobs thead")).to_be_hidden()
        cards = await page.locator("tr[data-job]").all()
        assert len(cards) >= 7
        for card in cards:
            name, state = card.locator("td.name a"), card.locator(".state")
            assert await name.evaluate(INSIDE), await name.text_content()
            assert await state.evaluate(INSIDE), await name.text_content()
            # the card is one block: its name and state on its first line, the state to the right
            top = await name.evaluate("e => e.getBoundingClientRect().top")
            badge = await state.evaluate(
                "e => { const r = e.getBoundingClientRect(); return [r.top, r.left]; }"
            )
            assert abs(badge[0] - top) < 12 and badge[1] > PHONE / 2, (await name.text_content(), top, badge)
        # each value says what it is; an empty one (no restarts, no progress) is not shown
        mnist = page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/mnist-ddp"]')
        label = "e => getComputedStyle(e, '::before').content"
        assert await mnist.locator("td.pods").evaluate(label) == '"Pods"'
        assert await mnist.locator("td.time").evaluate(label) == '"Created"'
        await expect(mnist.locator("td.restarts")).to_be_visible()
        await expect(page.locator('tr[data-job$="/team-a/resnet"] td.restarts')).to_be_hidden()
    # the live update swaps the cards as it swapped the rows
    await crowded.stack.apply(job("PyTorchJob", "pocket", {"Master": 1}, namespace="team-a"))
    card = page.locator('tr[data-job="pytorchjobs.kubetrain.io/team-a/pocket"]')
    await expect(card.locator(".state")).to_have_text("Running", timeout=10_000)
    await page.evaluate("window.__notReloaded = true")
    await crowded.stack.kube.patch(
        job_resource("PyTorchJob"), "team-a", "pocket", {"spec": {"runPolicy": {"suspend": True}}}
    )
    await expect(card.locator(".state")).to_have_text("Suspended", timeout=10_000)
    assert await page.evaluate("window.__notReloaded === true")
    assert await card.locator(".state").evaluate(INSIDE)
    assert page.errors == []  # type: ignore[attr-defined]


async def test_a_tablet_has_cards_side_by_side_and_a_desktop_the_table(
    crowded: Scene, page_as: PageFactory
) -> None:
    page = await page_as(crowded.admin, width=TABLET)
    await page.goto(crowded.url("/"))
    assert await sideways(page) <= 0
    tops = await page.locator("tr[data-job]").evaluate_all(
        "rows => rows.slice(0, 2).map(r => r.getBoundingClientRect().top)"
    )
    assert tops[0] == tops[1], tops
    page = await page_as(crowded.admin, width=DESKTOP)
    await page.goto(crowded.url("/"))
    await expect(page.locator("table.jobs thead")).to_be_visible()
    display = await page.locator("table.jobs tbody").evaluate("b => getComputedStyle(b).display")
    assert display == "table-row-group"


async def test_a_job_pages_pods_are_a_block_a_pod_on_a_phone(crowded: Scene, page_as: PageFactory) -> None:
    page = await page_as(crowded.admin, width=PHONE)
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/gang-wait"))
    pods = page.locator("#pod-table tbody tr")
    await expect(pods).to_have_count(3)
    await expect(page.locator("#pod-table thead")).to_be_hidden()
    for pod in await pods.all():
        for cell in ("td.title", ".podstate", "td.why"):
            assert await pod.locator(cell).evaluate(INSIDE), cell
    # the spec: each field's name over its value, the value the whole width
    lefts = await page.locator("dl.summary").evaluate(
        "d => ['dt', 'dd'].map(t => d.querySelector(t).getBoundingClientRect().left)"
    )
    assert lefts[0] == lefts[1], lefts
    box = page.locator("#pod-table").locator("xpath=..")
    assert await box.evaluate("b => b.scrollWidth <= b.clientWidth")
    assert await sideways(page) <= 0


async def small_targets(page: Page, selector: str) -> list[str]:
    found: list[str] = await page.locator(selector).evaluate_all(
        "els => els.filter(e => e.offsetParent !== null && e.getBoundingClientRect().height < 24)"
        ".map(e => e.outerHTML.slice(0, 80))"
    )
    return found


async def test_what_a_phone_user_taps_is_at_least_24_px_tall(crowded: Scene, page_as: PageFactory) -> None:
    taps = "a, button, select, input:not([type=hidden]), summary"
    page = await page_as(crowded.admin, width=PHONE)
    await page.goto(crowded.url("/"))
    list_taps = f"header.top :is({taps}), .filters :is({taps}), #counts a, #jobs td a"
    assert await small_targets(page, list_taps) == []
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/mnist-ddp"))
    assert await small_targets(page, f".actions :is({taps}), .logs-form :is({taps})") == []
    await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/llm-eval/delete"))
    assert await small_targets(page, f"form.confirm :is({taps})") == []


BAR_PAIRS = """svg => {
  const NS = "http://www.w3.org/2000/svg", out = [];
  const bg = getComputedStyle(document.body).backgroundColor;
  for (const state of ["pending", "running", "succeeded", "failed"]) {
    for (const open of ["", " open"]) {
      const bar = document.createElementNS(NS, "path"), text = document.createElementNS(NS, "text");
      bar.setAttribute("class", "bar " + state + open);
      text.setAttribute("class", "bar-label " + state + open);
      svg.append(bar, text);
      const b = getComputedStyle(bar);
      out.push([state + open, getComputedStyle(text).fill, b.fill, Number(b.opacity), bg]);
      bar.remove(); text.remove();
    }
  }
  return out;
}"""


def over(fill: str, opacity: float, background: str) -> str:
    """The colour a bar of `fill` drawn at `opacity` shows on `background` (both `rgb(r, g, b)`)."""
    top = [int(x) for x in fill[fill.index("(") + 1 : -1].split(",")[:3]]
    under = [int(x) for x in background[background.index("(") + 1 : -1].split(",")[:3]]
    mixed = [round(t * opacity + u * (1 - opacity)) for t, u in zip(top, under, strict=True)]
    return f"rgb({mixed[0]}, {mixed[1]}, {mixed[2]})"


async def test_an_exit_code_on_a_bar_reads_on_every_bar_colour_in_both_schemes(
    crowded: Scene, page_as: PageFactory
) -> None:
    for dark in (False, True):
        page = await page_as(crowded.admin, dark=dark)
        await page.goto(crowded.url("/namespaces/team-a/pytorchjobs/mnist-ddp"))
        # the OOMKilled run's label, on its (failed) bar
        label = page.locator("text.bar-label", has_text="exit 137")
        await expect(label).to_have_class("bar-label failed")
        chunk = page.locator(".gantt-chunk svg").first
        for state, text, bar, opacity, background in await chunk.evaluate(BAR_PAIRS):
            shown = over(bar, opacity, background)
            assert contrast(text, shown) >= 4.5, ("dark" if dark else "light", state, text, shown)
