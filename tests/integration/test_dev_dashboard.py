"""`kubetrain dev` serves the dashboard on loopback and prints its URL: the example job is on
the list and its page shows its pods as a timeline, its logs and events, and the progress its
rank-0 pod reports (through the training-progress endpoint) as plots — with no sign-in; the
command itself prints the progress bar."""

from __future__ import annotations

import re

import aiohttp
from devrun import dev_dashboard


async def test_the_printed_url_shows_the_example_job() -> None:
    async with dev_dashboard(["--run-seconds", "30", "--timeout", "60"]) as (url, out, stop):
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as resp:
                page = await resp.text()
                assert resp.status == 200
                assert 'href="/namespaces/default/pytorchjobs/pytorch-ddp"' in page
            async with session.get(url + "namespaces/default/pytorchjobs/pytorch-ddp") as resp:
                page = await resp.text()
                assert resp.status == 200
                assert 'data-slot="master-0"' in page and 'data-slot="worker-2"' in page
                assert "MASTER_ADDR=" in page  # the log tail
                assert "Created" in page  # the conditions
                # The example's rank 0 reported (0 % at its start): progress and loss plots.
                assert '<figure class="plot">' in page
                assert re.search(r"<figcaption>progress <b>\d+%</b>", page), page
                assert re.search(r"<figcaption>loss <b>[0-9.]+</b>", page)
        bar = re.search(
            r"^ +progress \[[#.]{24}\] +(\d+)%  ETA \d+:\d\d  loss [0-9.]+ · step \d+$", out.getvalue(), re.M
        )
        assert bar is not None, out.getvalue()

        # Ctrl-C while a page's live-update stream is open: dev stops promptly (the stream is
        # cancelled, not waited for).
        async with aiohttp.ClientSession() as session, session.get(url + "stream") as stream:
            assert (await stream.content.readline()).startswith(b": connected")
            assert await stop() < 15
