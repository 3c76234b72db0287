"""The Gantt chart's markup: few elements whatever the pod count, every bar findable for the
tooltip, chunks the browser may skip."""

from __future__ import annotations

import re

from kubetrain.dashboard.views import ganttsvg, timeline
from kubetrain.dashboard.views.podhistory import ContainerRun, PodLife


def life(i: int, *, failed: bool = False, restarted: bool = False) -> PodLife:
    runs = (ContainerRun("main", 10.0, 40.0, 137, "OOMKilled"),) if restarted else ()
    return PodLife(
        uid=f"u{i}",
        name=f"job-worker-{i}",
        replica_type="worker",
        index=i,
        attempt=0,
        created=0.0,
        started=45.0 if restarted else 10.0,
        finished=90.0 if failed else None,
        phase="Failed" if failed else "Running",
        exit_code=1 if failed else None,
        reason="Error" if failed else "",
        runs=runs,
    )


def failed_life(name: str, reason: str, message: str) -> PodLife:
    """A pod of one attempt that ran from 1 s to 5 s and failed with exit code 1."""
    return PodLife(
        uid="u",
        name=name,
        replica_type="worker",
        index=0,
        attempt=0,
        created=0.0,
        started=1.0,
        finished=5.0,
        phase="Failed",
        exit_code=1,
        reason=reason,
        message=message,
    )


def test_bars_of_a_state_are_one_path_per_chunk_and_full_chunks_are_lazy() -> None:
    lives = [life(i, failed=i % 10 == 0, restarted=i % 3 == 0) for i in range(120)]
    chart = timeline.gantt(lives, [], 100.0)
    html = ganttsvg.gantt_html(chart)
    chunks = re.findall(r'<div class="gantt-chunk( lazy)?" data-first="(\d+)">', html)
    assert chunks == [(" lazy", "0"), (" lazy", "50"), ("", "100")]  # the last, partial one not lazy
    # per chunk: pending, running (open), failed (the in-place restarts' and the pods') -- one path each
    for part in html.split('<div class="gantt-chunk')[1:]:
        classes = re.findall(r'<path class="bar ([\w ]+)"', part)
        assert sorted(classes) == ["failed", "pending", "running open"]
    assert html.count("<rect") == 0
    assert len(re.findall(r'<text class="row"', html)) == 120


def test_each_rows_bars_and_title_lines_correspond_in_time_order() -> None:
    chart = timeline.gantt([life(3, restarted=True)], [], 100.0)
    html = ganttsvg.gantt_html(chart)
    row = re.search(r'data-slot="worker-3" data-bars="([^"]*)">worker-3<title>([^<]*)</title>', html)
    assert row is not None
    bars = [b.split() for b in row.group(1).split(";")]
    lines = row.group(2).split("\n")
    assert [b[2] for b in bars] == ["pending", "failed", "running"]
    assert len(lines) == 3
    assert "exit code 137 (OOMKilled)" in lines[1] and "running since" in lines[2]
    xs = [float(b[0]) for b in bars]
    assert xs == sorted(xs)
    # the bar's geometry in data-bars is where its path draws it
    x, w = bars[1][0], bars[1][1]
    assert re.search(rf'<path class="bar failed" d="M{x} 3h{w}v14h-{w}z"', html)
    # its exit code is drawn on it with the bar's classes (the label's colour is the bar's)
    assert re.search(r'<text class="bar-label failed" x="[\d.]+" y="[\d.]+">exit 137</text>', html)


def test_a_long_message_stays_on_its_own_line() -> None:
    dying = failed_life("p", "Error", "line one\nline two")
    html = ganttsvg.gantt_html(timeline.gantt([dying], [], 10.0))
    title = re.search(r"<title>([^<]*)</title>", html)
    assert title is not None and len(title.group(1).split("\n")) == 2  # pending, failed
    assert "line one line two" in title.group(1)


def test_gantt_svg_escapes_every_text() -> None:
    life = failed_life('p"><script>x</script>', "<b>Error</b>", "&amp;")
    svg = ganttsvg.gantt_html(timeline.gantt([life], [], 10.0))
    assert "<script>" not in svg and "<b>" not in svg
    assert "&lt;script&gt;" in svg and "&lt;b&gt;Error&lt;/b&gt;" in svg and "&amp;amp;" in svg
