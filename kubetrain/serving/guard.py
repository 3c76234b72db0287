"""Connection limits for kubetrain's aiohttp servers (the webhook, the health/metrics port, the
training-progress endpoint and the dashboard).

aiohttp has no header or request-body timeout and no connection cap: a client that opens
connections and sends nothing, half a header or half a body keeps them (and their buffers)
forever. `guard_runner` adds those limits to an AppRunner's server:

```python
guard = ConnectionGuard(ConnectionLimits(header_timeout=10, idle_timeout=60, max_connections=512))
app = web.Application(middlewares=[guard.middleware])
runner = web.AppRunner(app, keepalive_timeout=guard.limits.idle_timeout)
await runner.setup()
guard.install(runner)                       # before the site starts
```

or all of it, a `GuardedTCPSite` serving `app` started too, as the webhook, the training-progress
endpoint, the health/metrics port and the dashboard do:
`runner, port = await guard.serve(app, host, port, ssl_context=ctx)`.

- `header_timeout`: a new connection must deliver a complete request head within it;
- `idle_timeout`: after a response, the next request head must be complete within it;
- neither runs while a handler runs: the deadline stops when the middleware is entered (the head
  was read) and the idle one starts when the handler returns, so a long-lived response (the
  dashboard's live-update and log-follow streams) is never cut by them;
- `max_connections`: connections past this number are closed at once;
- a TLS handshake must complete within `header_timeout` too (`GuardedTCPSite`; asyncio's
  default is 60 s), and a connection is only counted once its handshake is done;
- the request body's timeout is the handler's (`ConnectionLimits.body_timeout`), because only
  the handler reads the body: WebhookServer's own body reader, or `guard.read_body(request,
  request.post)` (the dashboard's forms): past it, HTTP 408, and the connection is not kept
  alive and is aborted ABORT_GRACE seconds after the answer.

A connection over its deadline is aborted (no TLS close-notify wait) and logged at debug level.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
T = TypeVar("T")
# A client whose body stalled may never read the 408 nor finish a TLS close: its connection is
# aborted this long after the answer.
ABORT_GRACE = 1.0


def abort_later(request: web.Request) -> None:
    """Abort `request`'s connection ABORT_GRACE seconds from now, after its answer: the client
    stalled or overfilled the server and may never read the answer nor finish the TLS shutdown."""
    transport = request.transport
    if transport is not None:
        asyncio.get_running_loop().call_later(ABORT_GRACE, transport.abort)


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    idle_timeout: float = 60.0
    max_connections: int = 512


class ConnectionGuard:
    """Deadlines and a cap on the connections of one aiohttp `web.Server`."""

    def __init__(self, limits: ConnectionLimits | None = None) -> None:
        self.limits = limits or ConnectionLimits()
        self._deadlines: dict[Any, float] = {}  # transport -> loop time it must be done by
        self._timers: dict[Any, asyncio.TimerHandle] = {}  # transport -> its pending timer
        self._open: set[Any] = set()
        self._transports: dict[Any, Any] = {}  # request handler -> its transport
        self.refused = 0  # connections closed because of max_connections
        self.expired = 0  # connections closed because of a deadline

    async def serve(
        self,
        app: web.Application,
        host: str,
        port: int,
        *,
        ssl_context: Any,
        runner_options: Mapping[str, Any] | None = None,
        **site_options: Any,
    ) -> tuple[web.AppRunner, int]:
        """Serve `app` on host:port under these limits (TLS handshakes within `header_timeout`;
        aiohttp's keep-alive timeout is `idle_timeout`). `runner_options` are AppRunner's
        (default: no access log, no signal handlers), `site_options` TCPSite's (`backlog`,
        `reuse_port`...). The started runner (`cleanup()` stops it) and the port bound."""
        options: dict[str, Any] = {"access_log": None, "handle_signals": False, **(runner_options or {})}
        runner = web.AppRunner(app, keepalive_timeout=self.limits.idle_timeout, **options)
        await runner.setup()
        self.install(runner)
        site = GuardedTCPSite(
            runner,
            host,
            port,
            ssl_context=ssl_context,
            handshake_timeout=self.limits.header_timeout,
            **site_options,
        )
        await site.start()
        addresses: list[Any] = runner.addresses
        return runner, int(addresses[0][1]) if addresses else port

    def install(self, runner: web.BaseRunner) -> None:
        """Watch the connections of a set-up runner's server (call after `runner.setup()`)."""
        server = runner.server
        if server is None:
            raise RuntimeError("ConnectionGuard.install needs a runner that is set up")
        limits = self.limits
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: Any, transport: asyncio.Transport) -> None:
            made(handler, transport)
            if len(self._open) >= limits.max_connections:
                self.refused += 1
                log.debug("closing a connection: %d connections are open already", len(self._open))
                transport.abort()
                return
            self._open.add(transport)
            self._transports[handler] = transport
            self._arm(transport, limits.header_timeout)

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            lost(handler, exc)
            transport = self._transports.pop(handler, None)
            if transport is not None:
                self._open.discard(transport)
                self._forget(transport)

        server.connection_made = connection_made  # type: ignore[method-assign]
        server.connection_lost = connection_lost  # type: ignore[method-assign]

    async def read_body(self, request: web.Request, read: Callable[[], Awaitable[T]]) -> T:
        """What `read` (`request.post`, `request.read`...) reads of `request`'s body, within
        `body_timeout`. Past it, `web.HTTPRequestTimeout` (408) is raised: the answer closes the
        connection, which is aborted ABORT_GRACE seconds later (the client stalled; it may never
        read the answer nor send the rest of its body)."""
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                return await read()
        except TimeoutError:
            pass
        log.debug("closing a connection that sent no complete request body in time")
        abort_later(request)
        refusal = web.HTTPRequestTimeout(text="the request body was not received in time\n")
        refusal.force_close()
        raise refusal

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def _arm(self, transport: Any, seconds: float) -> None:
        """Give `transport` a deadline `seconds` from now. Re-arming a connection that already
        has a timer moves only its deadline (a float): the timer, when it fires, finds the
        deadline later and re-schedules itself there — one timer per connection and idle
        period instead of a timer made and cancelled per request. A deadline earlier than the
        pending timer replaces the timer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        self._deadlines[transport] = deadline
        timer = self._timers.get(transport)
        if timer is not None and timer.when() <= deadline:
            return
        if timer is not None:
            timer.cancel()
        self._timers[transport] = loop.call_at(deadline, self._check, transport)

    def _disarm(self, transport: Any) -> None:
        self._deadlines.pop(transport, None)  # a pending timer finds no deadline and stops

    def _forget(self, transport: Any) -> None:
        self._deadlines.pop(transport, None)
        timer = self._timers.pop(transport, None)
        if timer is not None:
            timer.cancel()

    def _check(self, transport: Any) -> None:
        timer = self._timers.pop(transport, None)
        deadline = self._deadlines.get(transport)
        if timer is None or deadline is None:
            return
        if deadline > timer.when():  # re-armed since the timer was set: wait for the new deadline
            self._timers[transport] = asyncio.get_running_loop().call_at(deadline, self._check, transport)
            return
        self._expire(transport)

    def _expire(self, transport: Any) -> None:
        self._deadlines.pop(transport, None)
        if transport in self._open:
            self.expired += 1
            log.debug("closing a connection that sent no complete request in time")
            transport.abort()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        self._disarm(transport)
        try:
            return await handler(request)
        finally:
            if transport is not None and transport in self._open and not transport.is_closing():
                self._arm(transport, self.limits.idle_timeout)


class GuardedTCPSite(web.TCPSite):
    """A TCPSite whose TLS handshakes time out after `handshake_timeout` seconds."""

    def __init__(self, runner: web.BaseRunner, *args: Any, handshake_timeout: float, **kwargs: Any) -> None:
        super().__init__(runner, *args, **kwargs)
        self._handshake_timeout = handshake_timeout

    async def start(self) -> None:
        if self._ssl_context is None:
            await super().start()
            return
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            server,
            self._host,
            self._port,
            ssl=self._ssl_context,
            ssl_handshake_timeout=self._handshake_timeout,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )
        sockets = self._server.sockets
        self._bound_port = sockets[0].getsockname()[1] if sockets else self._port
