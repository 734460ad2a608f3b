"""`clm migrate` on Zalando's production configuration: files translated, Go actions, places left marked,
functions and fields the renderer lacks, and the time taken.

    .venv/bin/python bench/migrate.py [--corpus ../shared/corpus/kubernetes-on-aws] [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from clm.migrate.tree import migrate_tree, report_lines

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "kubernetes-on-aws"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    actions = sum(
        len(re.findall(r"\{\{", path.read_text()))
        for path in args.corpus.rglob("*")
        if path.is_file() and path.suffix in (".yaml", ".yml")
    )
    times = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as dest:
            start = time.perf_counter()
            report = migrate_tree(args.corpus, Path(dest))
            times.append(time.perf_counter() - start)
    print("\n".join(report_lines(report)))
    best = min(times)
    print(
        f"{actions} Go actions in {len(report.translated)} templates, translated in {best:.2f} s "
        f"(best of {args.rounds}: {len(report.translated) / best:.0f} files/s)"
    )


if __name__ == "__main__":
    main()
