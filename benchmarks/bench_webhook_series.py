"""CPU per admission request of controller-runtime's webhook series (the request middleware).

    .venv/bin/python benchmarks/bench_webhook_series.py [--requests 50000] [--rounds 5]
    PYTHONPATH=<dir> .venv/bin/python benchmarks/bench_webhook_series.py   # another tree's kubetrain

What kubetrain.webhook.requestmetrics adds to every review the webhook answers: the in-flight
gauge up and down, the request counter of its code and the latency histogram's observation.
In-process, no HTTP: one mocked POST /validate answered by a handler that returns a prepared
response, `--requests` times through the middleware and `--rounds` times without it; each figure
is the least of the rounds' `time.process_time()`, and the series' cost is the difference per
request. (The whole review over TLS, with the series, is bench_webhook.py's.)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

from _common import load_average, publish
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from kubetrain.webhook.requestmetrics import instrumented

PATH = "/validate"


async def seconds(requests: int, answer: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> float:
    request = make_mocked_request("POST", PATH)
    started = time.process_time()
    for _ in range(requests):
        await answer(request)
    return time.process_time() - started


async def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    response = web.Response(text="{}")

    async def handler(request: web.Request) -> web.StreamResponse:
        return response

    middleware = instrumented((PATH,))

    async def through(request: web.Request) -> web.StreamResponse:
        return await middleware(request, handler)

    bare, with_series = [], []
    for _ in range(args.rounds):
        bare.append(await seconds(args.requests, handler))
        with_series.append(await seconds(args.requests, through))
    per_request_us = (min(with_series) - min(bare)) / args.requests * 1e6
    print(f"{per_request_us:.2f} µs CPU per request for the webhook series, best of {args.rounds}")
    publish(
        "webhook_series",
        {
            "requests": args.requests,
            "rounds": args.rounds,
            "us_per_request": round(per_request_us, 2),
            "load_average_1m": load_average(),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
