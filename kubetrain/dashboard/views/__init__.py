"""Pure view models of the dashboard: no aiohttp, no API client, `now` passed in."""
