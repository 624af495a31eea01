#!/usr/bin/env python3
"""Checks the links of every markdown file in the repository: every linked file exists, every
#section anchor names a heading of the linked markdown file, every #Lnn
(or #Lnn-Lmm) anchor is inside it, a text that says "line 96" links to line 96, and where the link
text names an identifier, or starts a list of them
([`locate`](...#L88), [copy_kv](...#L65), [`sm90::setmaxnreg_dec`, `setmaxnreg_inc`](...#L787)) the
linked line (or, for a declaration split over two lines, the one after it) holds the first as a whole
word in its code, not only in a comment or inside a longer name. A link's text may run over two lines.
Code moves as the stages grow; this test makes a link that no longer lands where its text says fail.

    python3 scripts/check_doc_links.py            (from anywhere; exit 1 and one line per bad link)
    python3 scripts/check_doc_links.py --fix      (moves a named link to the nearest line holding
                                                   its name, and says so; read the result)
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s#]+)(?:#L(\d+)(?:-L?(\d+))?)?\)")
IDENTIFIER = re.compile(r"^`?([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?`?$")
# Link texts that read as words rather than names: "[here](...)", "[v7](...)".
WORDS = re.compile(r"^(here|this|there|it|the [a-z ]+|v\d+)$")


SKIP = {"build", ".git", ".deps", ".venv", "node_modules", "__pycache__"}


def documents():
    """Every markdown file of the repository (build trees, hidden folders and environments aside)."""
    for path in sorted(ROOT.rglob("*.md")):
        parts = path.relative_to(ROOT).parts[:-1]
        if not any(p in SKIP or p.startswith((".", "build")) for p in parts):
            yield path


SECTION_LINK = re.compile(r"\]\(([^)\s#]*\.md|)#([^)\sL][^)\s]*|L[^0-9)][^)\s]*)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings (a repeated heading gets -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return out


def holds(line: str, name: str, code: bool) -> bool:
    """Whether a source line names `name` as a whole word: in its code (its // comment aside) for a
    name written as code (in backticks, or with _ or ::), anywhere for a plain word ("rows")."""
    if code and not line.lstrip().startswith("#"):
        line = line.split("//", 1)[0]
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", line) is not None


def nearest(lines, name, around, code):
    """The line number holding `name` closest to `around`, or None."""
    hits = [i + 1 for i, text in enumerate(lines) if holds(text, name, code)]
    return min(hits, key=lambda i: abs(i - around)) if hits else None


def first_identifier(text: str):
    """The identifier a link text names, or the first of a list of them ("`a`, `b`", "a and b")."""
    parts = [p.strip() for p in re.split(r",|\band\b", " ".join(text.split()))]
    names = [IDENTIFIER.match(p) for p in parts if p]
    if not names or not all(names) or any(WORDS.match(p) for p in parts if p):
        return None
    return names[0].group(1).split("::")[-1]


def main():
    fix = "--fix" in sys.argv[1:]
    bad = []
    for doc in documents():
        whole = doc.read_text()
        text_lines = whole.splitlines()
        for n, line in enumerate(text_lines, 1):
            for m in SECTION_LINK.finditer(line):  # a link to a heading: that heading exists
                target, anchor = m.groups()
                path = (doc.parent / target).resolve() if target else doc
                if path.is_file() and anchor not in anchors(path):
                    bad.append(f"{doc.relative_to(ROOT)}:{n}: ({target}#{anchor}): no such heading in {path.name}")
        moves = []
        for m in LINK.finditer(whole):  # over the whole text: a link's words may wrap onto the next line
            text, target, first, last = m.groups()
            n = whole.count("\n", 0, m.start()) + 1
            if "\n\n" in text or "://" in target or target.startswith("mailto:") \
                    or target.endswith(".md") and not first:
                continue
            path = (doc.parent / target).resolve()
            shown = " ".join(text.split())
            where = f"{doc.relative_to(ROOT)}:{n}: [{shown}]({target}{'#L' + first if first else ''})"
            if not path.exists():
                bad.append(f"{where}: no such file")
                continue
            if not first or path.is_dir():
                continue
            lines = path.read_text().splitlines()
            lo, hi = int(first), int(last or first)
            if not 1 <= lo <= hi <= len(lines):
                bad.append(f"{where}: line {lo} is past the end ({len(lines)} lines)")
                continue
            said = re.search(r"\blines? (\d+)", shown)
            if said and int(said.group(1)) != lo:
                bad.append(f"{where}: the text says line {said.group(1)}, the link goes to line {lo}")
            name = first_identifier(text)
            code = "`" in text or "_" in text or "::" in text
            # A declaration may put its name on the line after its attributes.
            if name and not any(holds(lines[i - 1], name, code) for i in range(lo, min(hi + 1, len(lines)) + 1)):
                moved = nearest(lines, name, lo, code) if fix and not last else None
                if moved:
                    moves.append((m.start(), m.end(), m.group(0).replace(f"#L{first})", f"#L{moved})")))
                    print(f"{where}: moved to line {moved}: {lines[moved - 1].strip()[:80]}")
                else:
                    bad.append(f"{where}: line {lo} does not hold `{name}`: {lines[lo - 1].strip()[:80]}")
        if moves:
            for start, end, new in reversed(moves):
                whole = whole[:start] + new + whole[end:]
            doc.write_text(whole)
    print("\n".join(bad) if bad else "every link lands where its text says")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
