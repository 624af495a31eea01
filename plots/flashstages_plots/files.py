"""Which files hold markers, and rendering them: ``--readme`` files as given, and with ``--repo-docs``
the repository's markdown (``repo_doc_files``).

Markers live only in markdown: the top README and plots/README.md, docs/, each stage's README.md and
NOTES.md, ceilings/'s markdown, and the README of the results folder being read. Source files
(.cu, .cuh, .h, .cpp) hold no markers; the numbers they once quoted are in the generated tables.
``render_files`` renders every file and writes none: main() writes them only when nothing failed.
"""

from __future__ import annotations

import os
from pathlib import Path

from .markers import is_markdown, render_text
from .results import Results, ResultsError

REPO_ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {"build", ".old", ".deps", ".venv", ".git", "__pycache__", "node_modules"}
# The files of a stage's folder that can hold markers: its textbook page and its lab notebook.
STAGE_DOCS = {"README.md", "NOTES.md"}


def reference_folder(root: Path) -> Path | None:
    """The reference run's folder, results/<gpu>, that results/REFERENCE names (its first line that is
    not a comment); None where the repository has no such file."""
    setting = root / "results" / "REFERENCE"
    if not setting.is_file():
        return None
    names = [line.strip() for line in setting.read_text().splitlines() if line.strip() and not line.startswith("#")]
    if len(names) != 1 or "/" in names[0]:
        raise ResultsError(f"{setting} should name one folder of results/, not {names}")
    return root / "results" / names[0]


def _skipped_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith((".", "build"))


def _walk(folder: Path, keep) -> list[Path]:
    """Files under folder whose name passes keep(name), never entering build/, .old/, .deps/, .venv/
    (or any hidden or build* folder)."""
    out: list[Path] = []
    if not folder.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not _skipped_dir(d))
        out += [Path(dirpath) / f for f in sorted(filenames) if keep(f)]
    return out


def _is_md(name: str) -> bool:
    return Path(name).suffix.lower() == ".md"


def repo_doc_files(root: Path, results: Path | None = None) -> list[Path]:
    """Every file of the repository that can hold markers, all of them markdown: the READMEs, docs/,
    the stages' README.md and NOTES.md, ceilings/; of the results/<gpu>/ READMEs only the one beside
    `results` (each GPU's tables come from its own files; None: every one)."""
    files = [root / "README.md", root / "plots" / "README.md"]
    files += _walk(root / "docs", _is_md)
    files += _walk(root / "stages", lambda name: name in STAGE_DOCS)
    files += _walk(root / "ceilings", _is_md)
    results_root = root / "results"
    if results_root.is_dir():
        files += sorted(p / "README.md" for p in results_root.iterdir() if p.is_dir() and not _skipped_dir(p.name)
                        and (results is None or p.resolve() == results.resolve()))
    return [p for p in files if p.is_file()]


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)


def marked_files(readmes: list[Path], repo_root: Path | None, results: Path) -> list[tuple[Path, str]]:
    """(path, name to print) of every file to render: the --readme files as given, then, when
    repo_root is given (--repo-docs), the repository's files named relative to it; each file once."""
    files: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    candidates = [(p, str(p)) for p in readmes]
    if repo_root is not None:
        if not repo_root.is_dir():
            raise ResultsError(f"--repo-root {repo_root} does not exist")
        candidates += [(p, _display(p, repo_root)) for p in repo_doc_files(repo_root, results)]
    for path, shown in candidates:
        if path.resolve() not in seen:
            seen.add(path.resolve())
            files.append((path, shown))
    return files


def render_files(files: list[tuple[Path, str]], results: Results) -> tuple[list[tuple[Path, str, str]], list[str]]:
    """Render every file: ([(path, display name, new text) for each file that changes], stale lines).
    Nothing is written here; any error in any file is raised with all of them listed. A --readme file
    that is not markdown is read as plain text: backticks there are no code spans."""
    updates, stale, errors = [], [], []
    for path, shown in files:
        try:
            with open(path, encoding="utf-8", newline="") as f:  # newline="": keep CRLF as is
                old = f.read()
        except UnicodeDecodeError:
            errors.append(f"{shown}: not UTF-8 text")
            continue
        try:
            new, found = render_text(old, results, shown, is_markdown(path))
        except ResultsError as err:
            errors.append(str(err))
            continue
        stale += [f"stale: {shown}:{s.line}: {s.text}" for s in found]
        if new != old:
            updates.append((path, shown, new))
    if errors:
        raise ResultsError("\n".join(errors))
    return updates, stale
