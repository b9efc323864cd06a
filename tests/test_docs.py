"""The documentation stays true to the tree: every module of explorer/ is in the architecture page, every
CLI command in the CLI page, every relative link leads to a file, and the README stays a short front door.

`python tests/test_docs.py` rewrites the module list of docs/architecture.md from the tree (each module's
docstring, first sentence) and the supported models' table of docs/formats.md from the family rows (each row's
`doc`, explorer/core/families.py), each between its two markers; the prose around them is written by hand."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
BEGIN, END = "<!-- modules: begin -->", "<!-- modules: end -->"
FORMATS = DOCS / "formats.md"
FAMILIES_BEGIN, FAMILIES_END = "<!-- families: begin -->", "<!-- families: end -->"
README_LIMIT = 15 * 1024


def modules() -> set[str]:
    """Every Python module of the package, as a path from the repository root."""
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "explorer").rglob("*.py")}


def documented_modules(text: str) -> set[str]:
    """The modules the architecture page lists: `- `name.py` ...` bullets under a `### `explorer/pkg/`` heading."""
    found, package = set(), None
    for line in text.splitlines():
        heading = re.match(r"^###\s+`(explorer(?:/[\w/]*)?)/?`", line)
        if heading:
            package = heading.group(1).rstrip("/")
        entry = re.match(r"^- `([\w/]+\.py)`", line)
        if entry and package:
            found.add(f"{package}/{entry.group(1)}")
    return found


def cli_commands() -> list[str]:
    """The commands, read from the one table the CLI itself reads them from (without importing the CLI)."""
    tree = ast.parse((ROOT / "explorer" / "cli.py").read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(getattr(t, "id", None) == "SUBCOMMANDS" for t in targets):
            return [key.value for key in node.value.keys]
    raise AssertionError("explorer/cli.py has no SUBCOMMANDS table")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def relative_links(text: str) -> list[str]:
    """Targets of Markdown links and images that point into the repository (not URLs, not in-page anchors)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)                   # code blocks hold no links
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_every_module_of_the_package_is_in_the_architecture_page():
    listed = documented_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    missing, stale = modules() - listed, listed - modules()
    assert not missing, f"modules missing from docs/architecture.md (run python tests/test_docs.py): {sorted(missing)}"
    assert not stale, f"docs/architecture.md lists modules that no longer exist: {sorted(stale)}"


def test_every_cli_command_has_its_section_in_the_cli_page():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## `?(\w+)`?\s*$", text, flags=re.M))
    commands = cli_commands()
    assert len(commands) >= 10
    missing = set(commands) - sections
    assert not missing, f"commands without a '## name' section in docs/cli.md: {missing}"


def test_every_relative_link_leads_to_a_file():
    broken = []
    for page in pages():
        for target in relative_links(page.read_text(encoding="utf-8")):
            path = unquote(target.split("#", 1)[0])
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def repository_paths(text: str) -> set[str]:
    """Paths into the repository that a page names in its text (`explorer/core/attention.py`, `bench/...`),
    placeholders in capitals (`resources/configs/NAME`) left out."""
    found = re.findall(r"(?<![\w/.~-])((?:explorer|tests|bench|packaging|resources|docs)/[\w./-]*[\w/])", text)
    return {path.rstrip("/") for path in found if not re.search(r"/[A-Z_]+$", path)}


def test_every_file_a_page_names_exists():
    """A module moved or renamed leaves no page pointing at its old place."""
    gone = [f"{page.relative_to(ROOT)}: {path}" for page in pages()
            for path in sorted(repository_paths(page.read_text(encoding="utf-8"))) if not (ROOT / path).exists()]
    assert not gone, gone


def test_the_path_finder_sees_paths_and_skips_placeholders_and_home_folders():
    text = ("see `explorer/core/attention.py`, bench/bench_app.py and resources/configs/NAME"
            " in ~/.cache/transformer-explorer/models")
    assert repository_paths(text) == {"explorer/core/attention.py", "bench/bench_app.py"}


def anchors(page: Path) -> set[str]:
    """The anchors a Markdown viewer makes of a page's headings: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    slugs = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        if slug in slugs:
            slug = next(f"{slug}-{n}" for n in range(1, 99) if f"{slug}-{n}" not in slugs)
        slugs.add(slug)
    return slugs


def test_every_anchor_of_a_link_is_a_heading_of_its_page():
    broken = []
    for page in pages():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]*#[^)\s]+)\)", text):
            path, anchor = target.split("#", 1)
            linked = (page.parent / unquote(path)) if path else page
            if linked.suffix == ".md" and linked.exists() and anchor not in anchors(linked):
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_anchors_are_made_as_a_markdown_viewer_makes_them(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Q / K / V\n## The app at 8,000 tokens\n## Why this token: four views\n## Notes\n## Notes\n")
    assert anchors(page) == {"q--k--v", "the-app-at-8000-tokens", "why-this-token-four-views", "notes", "notes-1"}


def test_the_link_finder_sees_links_and_images_and_skips_urls_and_anchors():
    """The check above would pass vacuously if it found no links: it finds these, and only these."""
    text = "[a](docs/a.md) ![p](shots/p.png) [u](https://x.org) [in](#here) [b](b.md#part)\n```\n[c](c.md)\n```"
    assert relative_links(text) == ["docs/a.md", "shots/p.png", "b.md#part"]


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) < README_LIMIT, f"README.md is {len(readme)} bytes; move detail into docs/"
    linked = {t.split("#", 1)[0] for t in relative_links(readme.decode("utf-8"))}
    pages_in_docs = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert pages_in_docs >= {"docs/guide.md", "docs/cli.md", "docs/api.md", "docs/formats.md", "docs/architecture.md"}
    assert not pages_in_docs - linked, f"pages of docs/ the README does not link: {sorted(pages_in_docs - linked)}"


def module_list() -> str:
    """The generated part of docs/architecture.md: one heading per package, one line per module."""
    by_package: dict[str, list[str]] = {}
    for path in sorted(modules()):
        package, name = path.rsplit("/", 1)
        by_package.setdefault(package, []).append(name)
    blocks = []
    for package, names in sorted(by_package.items()):
        lines = [f"### `{package}/`", ""]
        lines += [f"- `{name}` — {summary(ROOT / package / name)}" for name in names]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def summary(path: Path) -> str:
    """A module's docstring, first sentence."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    first = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0] if first else ""
    if not first:
        return "`python -m explorer`: runs `cli.main()`." if path.name == "__main__.py" else "(no docstring)"
    return first


def write_module_list() -> None:
    write_between(ARCHITECTURE, BEGIN, END, module_list())


def family_table() -> str:
    """The generated part of docs/formats.md: one line per family row, in the rows' order."""
    from explorer.core.families import FAMILIES

    lines = ["| Family | `model_type` | Attention | What differs |", "|---|---|---|---|"]
    lines += [f"| {row.doc.name} | `{model_type}` | {row.doc.attention} | {row.doc.differs} |"
              for model_type, row in FAMILIES.items()]
    return "\n".join(lines)


def between(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def write_between(page: Path, begin: str, end: str, generated: str) -> None:
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    page.write_text(f"{head}{begin}\n\n{generated}\n\n{end}{tail}", encoding="utf-8")


def test_every_family_row_has_its_line_and_the_formats_page_lists_the_rows():
    """docs/formats.md's supported models are the family rows, each with its doc, and nothing else."""
    from explorer.core.families import FAMILIES

    assert not [name for name, row in FAMILIES.items() if row.doc is None], "family rows without a doc"
    table = between(FORMATS.read_text(encoding="utf-8"), FAMILIES_BEGIN, FAMILIES_END)
    listed = [re.match(r"\|[^|]*\| `([^`]+)` \|", line).group(1) for line in table.splitlines()[2:]]
    assert listed == list(FAMILIES), "docs/formats.md's supported models are not the family rows"
    assert table == family_table(), "docs/formats.md differs from the family rows: run python tests/test_docs.py"


if __name__ == "__main__":
    write_module_list()
    write_between(FORMATS, FAMILIES_BEGIN, FAMILIES_END, family_table())
    sys.exit(0)
