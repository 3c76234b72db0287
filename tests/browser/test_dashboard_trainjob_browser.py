"""A Kubeflow Trainer TrainJob in a real browser, as `kubetrain dev --example trainer/trainjob-torch`
shows it: while its node pods run it reads Running in the list and on its page (Trainer writes
no Running condition), the Replicas column counts its Jobs per step and says so, and the job page
shows its steps instead of an empty replica table; Suspend and Resume act on it. A TrainJob
whose runtime's failure policy restarts it shows its whole-gang restarts in the Restarts column
(Trainer's status has no count: they come from its pods' `jobset.sigs.k8s.io/restart-attempt`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from devrun import dev_dashboard
from playwright.async_api import expect

from .conftest import SHOTS, PageFactory

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAME = "trainjob-torch-mnist"


async def test_a_running_trainjob_reads_running_in_the_list_and_on_its_page(page_as: PageFactory) -> None:
    flags = ["--example", "trainer/trainjob-torch", "--run-seconds", "60", "--timeout", "90"]
    async with dev_dashboard(flags) as (url, _, stop):
        page = await page_as(None)  # on loopback the dashboard acts as the kubeconfig's user
        await page.goto(url)
        row = page.locator(f'tr[data-job="trainjobs.trainer.kubeflow.org/default/{NAME}"]')
        await expect(row.locator(".state")).to_have_text("Running")
        # its pods, from the same pod informer as any kind's (owned by the TrainJob)
        await expect(row.locator("td.pods")).to_contain_text("Running")
        replicas = row.locator("td").nth(5)  # kind, namespace, name, state, pods, replicas
        await expect(replicas).to_have_text("node 1/1")
        await expect(replicas).to_have_attribute("title", re.compile(r"Jobs, not pods"))
        await expect(page.locator("#counts")).to_contain_text("Running 1")

        await page.click(f'a[href="/namespaces/default/trainjobs/{NAME}"]')
        await expect(page.locator("#job-state")).to_have_text("Running")
        await expect(page.locator("table.replicas")).to_have_count(1)  # the steps, no empty replica table
        await expect(page.locator("#steps tbody tr")).to_have_count(1)
        cells = page.locator("#steps tbody tr td")
        await expect(cells).to_have_text(["node", "2", "2 running of 2", re.compile(r"^1 active, 1 ready")])
        await expect(page.locator("#conditions")).to_contain_text("its state comes from its Jobs")
        SHOTS.mkdir(parents=True, exist_ok=True)  # docs/operations.md's picture of a TrainJob
        await page.screenshot(path=str(SHOTS / "dashboard-trainjob.png"))

        # Suspend and resume act on the TrainJob's spec.suspend (it has no runPolicy).
        await page.click('button:text("Suspend")')
        await expect(page.locator("#job-state")).to_have_text("Suspended")
        await expect(page.locator('button:text("Resume")')).to_be_visible()
        await expect(page.locator("#steps tbody tr td").nth(3)).to_contain_text("1 suspended")
        await page.click('button:text("Resume")')
        await expect(page.locator("#job-state")).to_have_text("Running")  # its Suspended stays, False
        await expect(page.locator('button:text("Suspend")')).to_be_visible()
        assert page.errors == []  # type: ignore[attr-defined]
        assert await stop() < 15


# A runtime whose node job fails at once (the simulated kubelet's exit code 1, no retry in the
# job: backoffLimit 0, restartPolicy Never) and a JobSet failure policy of two restarts: the
# TrainJob restarts twice as a whole, then fails with ReachedMaxRestarts.
FLAKY = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: flaky
  namespace: default
  labels: {trainer.kubeflow.org/framework: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      failurePolicy: {maxRestarts: 2}
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              backoffLimit: 0
              template:
                metadata:
                  annotations:
                    sim.kubetrain.io/run-seconds: "2"
                    sim.kubetrain.io/exit-code: "1"
                    sim.kubetrain.io/report-progress: "true"
                spec:
                  restartPolicy: Never
                  containers:
                    - name: node
                      image: pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime
                      command: [torchrun, train.py]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: flaky
  namespace: default
spec:
  runtimeRef: {name: flaky, kind: TrainingRuntime}
  trainer: {numNodes: 2}
"""


async def test_the_restarts_column_counts_a_trainjobs_whole_gang_restarts(
    page_as: PageFactory, tmp_path: Path
) -> None:
    manifest = tmp_path / "flaky.yaml"
    manifest.write_text(FLAKY)
    flags = ["-f", str(manifest), "--timeout", "60", "--keep-running"]
    async with dev_dashboard(flags) as (url, _, stop):
        page = await page_as(None)
        await page.goto(url)
        row = page.locator('tr[data-job="trainjobs.trainer.kubeflow.org/default/flaky"]')
        await expect(row.locator(".state")).to_have_text("Failed", timeout=30_000)
        header = page.locator("table thead th").nth(6)
        await expect(header).to_contain_text("Restarts")
        await expect(row.locator("td").nth(6)).to_have_text("2")  # maxRestarts used up
        await page.screenshot(path=str(SHOTS / "dashboard-trainjob-restarts.png"))
        await page.goto(url + "?sort=restarts")
        await expect(row.locator("td").nth(6)).to_have_text("2")
        assert page.errors == []  # type: ignore[attr-defined]
        assert await stop() < 15
