"""`clm rollout status --html` as a real browser shows it: Debian's headless Chromium loads the picture of a
halted, paused rollout (tests/unit/rollout_scenario.py); its DOM holds every cluster's row and the halt's problem as
text (no script), and its screenshot shows each row in its state's colour at the end of the time axis, the halt and
the pause marked across the rows. CI installs Chromium with tools/install-chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from clm.cli.rollout_picture import BAKING, FAILED, HALTED, PASSED, PAUSED, RUNNING, WAITING, rollout_page
from tests.unit.png_pixels import Image, read_png
from tests.unit.rollout_scenario import NOW, PROBLEM, STATES, halted_view

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--window-size=1200,800",
)
SHOT = os.environ.get("CLM_ROLLOUT_SCREENSHOT")  # where to keep the screenshot, to look at it
COLOURS = {
    "waiting": WAITING,
    "running": RUNNING,
    "baking": BAKING,
    "passed": PASSED,
    "failed": FAILED,
    "halted": HALTED,
    "paused": PAUSED,
}

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} absent: Debian's chromium package (tools/install-chromium) draws it"
)


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


NAMES = {rgb(colour): name for name, colour in COLOURS.items()}


def chromium(page: Path, *args: str) -> str:
    """Run headless Chromium on `page` with a new empty profile; its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("picture") / "rollout.html"
    path.write_text(rollout_page(halted_view(), NOW), encoding="utf-8")
    return path


def runs(image: Image, cells: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """The state colours met along `cells` (x, y), a run of one colour once, with where it began; others skipped."""
    met: list[tuple[str, int]] = []
    previous = None
    for index, (x, y) in enumerate(cells):
        name = NAMES.get(image.pixel(x, y))
        if name is not None and name != previous:
            met.append((name, index))
        previous = name
    return met


def test_the_dom_holds_every_cluster_row_and_the_problem_as_text(page: Path) -> None:
    dom = chromium(page, "--dump-dom")
    for cluster_id in STATES:
        assert f">{cluster_id}</text>" in dom
    assert "<script" not in dom.lower()  # the halt's problem is text, never an element
    assert "&lt;script&gt;alert('x')&lt;/script&gt; Deployment kube-system/coredns" in dom
    assert PROBLEM.startswith("<script>")


def test_the_screenshot_shows_each_row_in_its_states_colour_and_the_marks(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "rollout.png"
    chromium(page, f"--screenshot={shot}")
    if SHOT:
        shutil.copy(shot, SHOT)
    image = read_png(shot)
    # The axis ends at the right end of the bars: the last column a running bar reaches.
    band = range(image.height // 3, image.height)  # below the legend, whose swatches have the same colours
    end = max(x for x in range(image.width) for y in band[::4] if image.pixel(x, y) == rgb(RUNNING)) - 2
    column = runs(image, [(end, y) for y in band])
    clusters = list(STATES.values())  # the waves' rows: canary passed, pre-production rolls, production none yet
    assert [name for name, _ in column] == ["passed", clusters[0], "running", *clusters[1:4], *clusters[4:]]
    waiting_row = band[column[-1][1]] + 5  # the last cluster's row: waiting, crossed by the halt and the pause
    across = [name for name, _ in runs(image, [(x, waiting_row) for x in range(image.width)])]
    assert across == ["waiting", "halted", "waiting", "paused", "waiting"]
