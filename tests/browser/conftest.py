"""The browser tier: headless Chromium (Debian's `chromium`, installed by scripts/browser-deps)
driven by Playwright against the dashboard of a real DevStack with RBAC.

- `scene`: (module) DevStack with RBAC, the dashboard in token mode, alice's token (PyTorchJobs
  in team-a only), and a few jobs in several states, one with a restarted pod;
- `browser`: (module) Chromium, `--headless --no-sandbox --disable-gpu`;
- `page_as(token)`: a fresh page whose requests carry that bearer token (None: no header).
- `crowded`: (module) the scene plus a job with a long name and image and one whose pods wait
  for 64 GPUs (the layout tests' jobs).

Screenshots of the main pages go to $KUBETRAIN_DASHBOARD_SHOTS when it is set — the docs'
images are refreshed with `scripts/dashboard-screenshots`, which sets it and shrinks the images
the docs show into docs/images — and to a temporary directory otherwise, so a test run leaves the
tree as it was.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from dashboards import grant_role, rbac_dashboard
from jobs import job

from kubetrain.api.labels import LABEL_JOB_NAME
from kubetrain.dashboard.server import DashboardServer
from kubetrain.dev.stack import DevStack
from kubetrain.kube.resources import NAMESPACES, PODS, job_resource

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(
    os.environ.get("KUBETRAIN_DASHBOARD_SHOTS") or tempfile.mkdtemp(prefix="dashboard-shots-")
).resolve()

if not os.path.exists(CHROMIUM):
    pytest.skip(
        f"{CHROMIUM} is missing: run scripts/browser-deps (apt-get install chromium)", allow_module_level=True
    )

from playwright.async_api import Browser, Page, async_playwright  # noqa: E402


@dataclass
class Scene:
    stack: DevStack
    server: DashboardServer
    alice: str

    @property
    def admin(self) -> str:
        return self.stack.cluster.token

    def url(self, path: str = "/") -> str:
        return self.server.url.rstrip("/") + path


def sim(seconds: float | None = None, exit_code: int | None = None) -> dict[str, Any]:
    annotations = {}
    if seconds is not None:
        annotations["sim.kubetrain.io/run-seconds"] = str(seconds)
    if exit_code is not None:
        annotations["sim.kubetrain.io/exit-code"] = str(exit_code)
    return {"annotations": annotations}


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 15.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not true after {seconds} s")


async def build_scene(stack: DevStack) -> str:
    kube = stack.kube
    for ns in ("team-a", "team-b"):
        await kube.create(NAMESPACES, {"metadata": {"name": ns}})
    rules = [
        {
            "apiGroups": ["kubetrain.io"],
            "resources": ["pytorchjobs", "tfjobs"],
            "verbs": ["get", "list", "watch", "create", "patch", "delete"],
        },
        {"apiGroups": [""], "resources": ["pods", "pods/log", "events"], "verbs": ["get", "list", "watch"]},
    ]
    alice = await grant_role(stack, "team-a", "alice", "jobs", rules)
    await stack.apply(
        job(
            "PyTorchJob",
            "mnist-ddp",
            {"Master": 1, "Worker": 3},
            namespace="team-a",
            restart_policy="ExitCode",
        )
    )
    await stack.apply(
        job("TFJob", "resnet", {"Chief": 1, "Worker": 2}, namespace="team-a", template_metadata=sim(1))
    )
    await stack.apply(
        job(
            "PyTorchJob",
            "bert-finetune",
            {"Master": 1},
            namespace="team-a",
            restart_policy="Never",
            template_metadata=sim(1, exit_code=1),
        )
    )
    await stack.apply(
        job(
            "PyTorchJob",
            "llm-eval",
            {"Master": 1, "Worker": 1},
            namespace="team-a",
            run_policy={"suspend": True},
        )
    )
    await stack.apply(job("PyTorchJob", "secret-project", {"Master": 1}, namespace="team-b"))
    simulator = stack.simulator
    assert simulator is not None

    async def running() -> bool:
        pods = await kube.list(PODS, "team-a", label_selector=f"{LABEL_JOB_NAME}=mnist-ddp")
        return sum(p["status"].get("phase") == "Running" for p in pods["items"]) == 4

    await until(running)
    await asyncio.sleep(1.0)  # visible width for the first run's bar
    await simulator.finish("team-a", "mnist-ddp-worker-1", exit_code=137, reason="OOMKilled")

    async def recreated() -> bool:
        pods = await kube.list(PODS, "team-a", label_selector=f"{LABEL_JOB_NAME}=mnist-ddp")
        return any(
            p["metadata"]["name"] == "mnist-ddp-worker-1" and p["status"].get("phase") == "Running"
            for p in pods["items"]
        )

    await until(recreated)
    await report_progress(stack, "team-a", "mnist-ddp")
    return alice


async def report_progress(stack: DevStack, namespace: str, name: str) -> None:
    """What the training code reports (status.trainerStatus), five times, a minute apart."""
    start = datetime.now(UTC) - timedelta(minutes=5)
    for i, (pct, loss, acc) in enumerate(
        [(10, 2.3, 0.31), (30, 1.4, 0.62), (50, 0.9, 0.78), (70, 0.6, 0.86), (85, 0.45, 0.9)]
    ):
        status = {
            "progressPercentage": pct,
            "estimatedRemainingSeconds": (100 - pct) * 6,
            "metrics": [{"name": "loss", "value": str(loss)}, {"name": "accuracy", "value": str(acc)}],
            "lastUpdatedTime": (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        await stack.kube.patch_status(
            job_resource("PyTorchJob"), namespace, name, {"status": {"trainerStatus": status}}
        )
        await asyncio.sleep(0.2)  # each report its own watch event


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def scene() -> AsyncIterator[Scene]:
    async with rbac_dashboard() as (stack, server):
        yield Scene(stack, server, await build_scene(stack))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            await launched.close()


PageFactory = Callable[..., Awaitable[Page]]


@pytest_asyncio.fixture(loop_scope="module")
async def page_as(browser: Browser) -> AsyncIterator[PageFactory]:
    contexts = []

    async def open_page(
        token: str | None, *, javascript: bool = True, width: int = 1360, dark: bool = False
    ) -> Page:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        context = await browser.new_context(
            extra_http_headers=headers,
            java_script_enabled=javascript,
            viewport={"width": width, "height": 900},
            color_scheme="dark" if dark else "light",
        )
        contexts.append(context)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.errors = errors  # type: ignore[attr-defined]
        return page

    yield open_page
    for context in contexts:
        await context.close()


LONG_NAME = "very-long-experiment-name-for-hyperparam-sweep-7"
LONG_IMAGE = (
    "registry.example.com/research/very-deep-learning/pytorch-training-image-with-cuda-12:"
    "2026.11.27-abcdef0123456789"
)


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
