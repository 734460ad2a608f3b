"""A CLM configuration tree translated file by file: templates (YAML files) translated, other files copied,
symbolic links inside the tree kept as links; with a report of what was left marked and what is missing.

A symbolic link is a link of the file system, or git's link of a checkout without symlink support
(core.symlinks false): a regular file whose whole content is a relative path, without a newline, to another file
of the tree (Zalando's worker-combined/files.yaml is `../worker-splitaz/files.yaml`). Both become links in DEST,
which a config source reads through (an S3 sync uploads the target's content; CLM's git checkout follows them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from clm.migrate.errors import MigrateError
from clm.migrate.translator import Problem, translate

TEMPLATE_SUFFIXES = (".yaml", ".yml", ".tpl")


@dataclass
class TreeReport:
    """What a migration did (or, with check, would do)."""

    translated: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    marked: list[Problem] = field(default_factory=list)
    errors: list[MigrateError] = field(default_factory=list)
    functions: dict[str, list[str]] = field(default_factory=dict)  # missing function -> files
    fields: dict[str, list[str]] = field(default_factory=dict)  # missing model field -> files
    unchanged: int = 0  # templates with no Go action


def migrate_tree(src: Path, dest: Path | None) -> TreeReport:
    """Translate every template under `src` into `dest` (None: only report, write nothing)."""
    if not src.is_dir():
        raise MigrateError("not a directory", str(src), None)
    if dest is not None and dest.resolve().is_relative_to(src.resolve()):
        raise MigrateError("DEST must not be inside SRC", str(dest), None)
    report = TreeReport()
    for path in sorted(_files(src)):
        relative = path.relative_to(src).as_posix()
        target = dest / relative if dest is not None else None
        link = _link_target(path, src)
        if link is not None:
            report.linked.append(relative)
            if target is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink() or target.exists():
                    target.unlink()
                target.symlink_to(link)
            continue
        data = path.read_bytes()
        if not relative.endswith(TEMPLATE_SUFFIXES):
            report.copied.append(relative)
            _write(target, data)
            continue
        try:
            translation = translate(data.decode(), relative)
        except UnicodeDecodeError as exc:
            report.errors.append(MigrateError(f"not UTF-8 text ({exc.reason})", relative, None))
            continue
        except MigrateError as exc:
            report.errors.append(exc)
            continue
        report.translated.append(relative)
        report.unchanged += b"{{" not in data
        report.marked += translation.problems
        for name in translation.notes.functions:
            report.functions.setdefault(name, []).append(relative)
        for name in translation.notes.fields:
            report.fields.setdefault(name, []).append(relative)
        _write(target, translation.text.encode())
    return report


MAX_TEXT_LINK = 1024  # bytes: git's link blobs are a path


def _link_target(path: Path, src: Path) -> str | None:
    """Where `path` links to inside `src` (a file-system link, or git's text link), None if it is no such link."""
    if path.is_symlink():
        return os.readlink(path) if path.resolve().is_relative_to(src.resolve()) else None
    if path.is_dir() or path.stat().st_size > MAX_TEXT_LINK:
        return None
    try:
        text = path.read_bytes().decode()
    except UnicodeDecodeError:
        return None
    if not text or "\n" in text or text.startswith("/"):
        return None
    target = (path.parent / text).resolve()
    return text if target != path.resolve() and target.is_file() and target.is_relative_to(src.resolve()) else None


def _files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        found += [Path(folder) / name for name in files]
        found += [Path(folder) / name for name in dirs if (Path(folder) / name).is_symlink()]
    return found


def _write(target: Path | None, data: bytes) -> None:
    if target is None:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def report_lines(report: TreeReport) -> list[str]:
    """The report as text lines: counts, then every marked place and every missing function and field."""
    lines = [
        f"translated {len(report.translated)} templates ({report.unchanged} without Go actions), "
        f"copied {len(report.copied)} other files, kept {len(report.linked)} symbolic links; "
        f"{len(report.marked)} places left marked, {len(report.errors)} files not parsed"
    ]
    lines += [f"marked  {problem}" for problem in report.marked]
    lines += [f"error   {error}" for error in report.errors]
    for title, found in (("function", report.functions), ("field", report.fields)):
        for name, files in sorted(found.items()):
            shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
            lines.append(f"missing {title} {name}: used in {shown}")
    return lines
