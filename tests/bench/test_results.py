"""A benchmark run is written down as one summary: `<stem>.json` and one `<stem>.png` chart
(the run's Markdown is printed, not stored), rendered here from a kept run's results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

import bench.__main__ as bench_main

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
FULL_RUN = "2026-11-21-142641"  # every section but 7; the chart docs/benchmarks.md shows


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copy(RESULTS / f"{FULL_RUN}.json", tmp_path / f"{FULL_RUN}.json")
    return tmp_path / FULL_RUN


def test_a_run_is_one_json_and_one_chart(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = json.loads(run.with_suffix(".json").read_text())
    bench_main._write(run, results, None, update_readme=False)
    assert sorted(p.name for p in run.parent.iterdir()) == [f"{FULL_RUN}.json", f"{FULL_RUN}.png"]
    assert json.loads(run.with_suffix(".json").read_text())["checks"]
    with Image.open(run.with_suffix(".png")) as chart:
        # every panel on one figure: five latency panels, throughput and the soak
        assert chart.format == "PNG" and chart.height > 1.5 * chart.width
    summary = capsys.readouterr().out
    assert f"![{FULL_RUN}]({FULL_RUN}.png)" in summary


def test_a_run_without_matplotlib_is_its_json_alone(run: Path) -> None:
    results = json.loads(run.with_suffix(".json").read_text())
    bench_main._write(run, results, "pip install matplotlib failed", update_readme=False)
    assert [p.name for p in run.parent.iterdir()] == [f"{FULL_RUN}.json"]
    written = json.loads(run.with_suffix(".json").read_text())
    assert written["charts_missing"] == "pip install matplotlib failed"


def test_a_section_with_nothing_to_plot_writes_no_chart(tmp_path: Path) -> None:
    """Section 7 alone (several workers) has no panel: the JSON is the run's summary."""
    stem = tmp_path / "workers"
    results = json.loads((RESULTS / "2026-11-24-063738.json").read_text())
    bench_main._write(stem, results, None, update_readme=False)
    assert [p.name for p in tmp_path.iterdir()] == ["workers.json"]
