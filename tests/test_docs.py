"""The README is what a newcomer reads first, and the guide under docs/ holds the reference
it points to: every relative link in them (and in CONTRIBUTING) leads to a file that is
there, and every `#anchor` to a heading of that file; the README stays short and starts
with the two commands."""

import glob
import os
import re

from support.paths import REPO

PAGES = [os.path.join(REPO, "README.md"), os.path.join(REPO, "CONTRIBUTING.md")] + sorted(
    glob.glob(os.path.join(REPO, "docs", "*.md"))
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    with open(path) as page:
        headings = [line.lstrip("#").strip() for line in page if line.startswith("#") and not line.startswith("#!")]
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_leads_somewhere():
    broken = []
    for page in PAGES:
        text = open(page).read()
        # Code blocks hold shell lines, not links.
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            if not os.path.exists(path):
                broken.append("%s: %s (no such file)" % (os.path.relpath(page, REPO), target))
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                broken.append("%s: %s (no such heading)" % (os.path.relpath(page, REPO), target))
    assert broken == []


def test_the_readme_is_read_in_minutes_and_starts_with_the_two_commands():
    with open(os.path.join(REPO, "README.md")) as readme:
        text = readme.read()
    assert len(text.splitlines()) <= 150
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[:2] == ["The two commands", "Install"]
    commands = re.search(r"## The two commands\n\n```\n(.*?)```", text, flags=re.S).group(1)
    assert [line.split()[:2] for line in commands.splitlines()] == [["make", "demo"], ["make", "test"]]
    # Each page of the guide is linked from it.
    for page in glob.glob(os.path.join(REPO, "docs", "*.md")):
        assert "](docs/%s)" % os.path.basename(page) in text, page
