"""Draws docs/top.svg: `tokio-async top` as a terminal shows it, from a real run
(many-tasks with 60 service-shaped tasks and a ticker, watched for a few seconds so that
stuck times have grown), rendered from the terminal's cells (pyte) with their colours.
`python3 tools/top_picture.py` after `make build`."""

import os
import sys
from html import escape

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build  # noqa: E402
from support.process import RunningFixture  # noqa: E402
from test_top import Top, refreshed_at_least  # noqa: E402

OUTPUT = os.path.join(REPO, "docs", "top.svg")
ROWS, COLUMNS = 24, 110
LINE, CHAR = 18, 7.8
BACKGROUND, FOREGROUND = "#1e1e1e", "#d4d4d4"
# pyte's names for the ANSI colours, as a dark terminal theme draws them.
COLOURS = {"default": FOREGROUND, "cdcd00": "#dcdcaa", "00cd00": "#6a9955", "00cdcd": "#4ec9b0",
           "cd0000": "#f44747", "brown": "#dcdcaa", "green": "#6a9955", "cyan": "#4ec9b0", "red": "#f44747"}


def screen(work):
    with RunningFixture(build.fixture("many-tasks", "dev"), "60", work, extra_args=["2"],
                        env={"FIXTURE_TICKER": "1"}) as fixture:
        top = Top(fixture.pid, "--interval", "0.5", rows=ROWS, columns=COLUMNS, colour=True)
        top.wait_for(refreshed_at_least(12), "a dozen refreshes", timeout=60)
        top.press("j" * 6)
        cells = [[top.screen.buffer[y][x] for x in range(COLUMNS)] for y in range(ROWS)]
        top.quit_with("q")
        return cells


def svg(cells):
    width, height = COLUMNS * CHAR + 24, ROWS * LINE + 24
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans Mono, monospace" '
           'font-size="13">' % (width, height),
           '<rect width="100%%" height="100%%" rx="6" fill="%s"/>' % BACKGROUND]
    for y, row in enumerate(cells):
        baseline = 12 + (y + 1) * LINE - 5
        x = 0
        while x < COLUMNS:
            cell = row[x]
            # A run of cells drawn alike.
            end = x
            while end < COLUMNS and (row[end].fg, row[end].reverse, row[end].bold) == (cell.fg, cell.reverse, cell.bold):
                end += 1
            text = "".join(c.data for c in row[x:end])
            left = 12 + x * CHAR
            colour = COLOURS.get(cell.fg, FOREGROUND)
            if cell.reverse:
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
                    left, 12 + y * LINE, (end - x) * CHAR, LINE, FOREGROUND))
                colour = BACKGROUND
            if text.strip():
                weight = ' font-weight="bold"' if cell.bold else ""
                out.append('<text x="%.1f" y="%d" fill="%s" xml:space="preserve"%s>%s</text>' % (
                    left, baseline, colour, weight, escape(text.rstrip() if not cell.reverse else text)))
            x = end
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    import tempfile
    with tempfile.TemporaryDirectory() as work:
        picture = svg(screen(work))
    with open(OUTPUT, "w") as out:
        out.write(picture)
    print("wrote", os.path.relpath(OUTPUT, REPO))


if __name__ == "__main__":
    main()
