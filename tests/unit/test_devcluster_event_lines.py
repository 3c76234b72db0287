"""devcluster encodes a watch event once for all the watchers it is sent to (as kube-apiserver's
watch cache does), and never serves one object's line for another or for a newer version."""

from __future__ import annotations

from kubetrain.devcluster.apiserver.storage.eventlines import EventLines


def encoder(calls: list[str], text: str):  # type: ignore[no-untyped-def]
    def encode() -> bytes:
        calls.append(text)
        return text.encode()

    return encode


def test_an_event_is_encoded_once_for_every_watcher_at_its_version() -> None:
    lines, calls = EventLines(), []
    pod = {"metadata": {"name": "p", "resourceVersion": "5"}}
    for _ in range(3):
        assert lines.line("ADDED", pod, "v1", "Pod", encoder(calls, "added")) == b"added"
    assert calls == ["added"]
    # Another served version, another event type: encoded on their own.
    assert lines.line("ADDED", pod, "v2", "Pod", encoder(calls, "v2")) == b"v2"
    assert lines.line("DELETED", pod, "v1", "Pod", encoder(calls, "deleted")) == b"deleted"
    assert calls == ["added", "v2", "deleted"]


def test_a_new_version_or_another_object_is_encoded_again() -> None:
    lines, calls = EventLines(), []
    pod = {"metadata": {"name": "p", "resourceVersion": "5"}}
    lines.line("ADDED", pod, "v1", "Pod", encoder(calls, "rv5"))
    pod["metadata"]["resourceVersion"] = "6"  # written again in place: a new version
    assert lines.line("MODIFIED", pod, "v1", "Pod", encoder(calls, "rv6")) == b"rv6"
    other = {"metadata": {"name": "q", "resourceVersion": "6"}}
    assert lines.line("MODIFIED", other, "v1", "Pod", encoder(calls, "q")) == b"q"
    assert calls == ["rv5", "rv6", "q"]


def test_the_cache_is_bounded() -> None:
    lines = EventLines(size=2)
    pods = [{"metadata": {"name": str(i), "resourceVersion": str(i)}} for i in range(5)]
    for pod in pods:
        lines.line("ADDED", pod, "v1", "Pod", lambda: b"x")
    assert len(lines._lines) == 2
