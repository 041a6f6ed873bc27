#!/usr/bin/env python3
"""Writes docs/cli.md from the program's own --help, or checks that it is current.

    python3 tools/cli_docs.py --cli build/tools/rlflow [--out docs/cli.md]
    python3 tools/cli_docs.py --cli build/tools/rlflow --check docs/cli.md

Every command and subcommand's --help, in the program's order. What depends on the machine
that runs it (the program's path, its count of physical cores) is written in words, so the
page is the same wherever it is generated. The suite runs --check (ctest: "cli: docs/cli.md
is the program's --help"), so a changed flag fails there until this script is run again.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HEADER = """# Command-line reference

Generated from `rlflow --help` and each command's `--help` by `python3 tools/cli_docs.py --cli
build/tools/rlflow`; a test checks that it is current. Guides: [usage.md](usage.md) (the
command line at work), [eqsat.md](eqsat.md), [agents.md](agents.md), [targets.md](targets.md).
"""


def help_text(cli, words):
    out = subprocess.run([cli, *words, "--help"], check=True, capture_output=True, text=True).stdout
    # Machine-dependent parts in words: the program's path and this machine's core count.
    out = re.sub(r"^Usage: \S+", "Usage: rlflow", out, flags=re.MULTILINE)
    out = re.sub(r"(this machine's (?:physical cores|hardware threads)), \d+", r"\1", out)
    return out.rstrip() + "\n"


def subcommands(text):
    """The names listed under "Subcommands:" in a --help text."""
    names, inside = [], False
    for line in text.splitlines():
        if line.startswith("Subcommands:"):
            inside = True
            continue
        if inside:
            m = re.match(r"^  (\S+)", line)
            if not line.strip():
                break
            if m:
                names.append(m.group(1))
    return names


def page(cli):
    parts = [HEADER]
    todo = [[]]
    while todo:
        words = todo.pop(0)
        text = help_text(cli, words)
        title = "rlflow" + "".join(" " + w for w in words)
        parts.append(f"\n## `{title}`\n\n```\n{text}```\n")
        todo[0:0] = [words + [s] for s in subcommands(text)]  # depth first, in the program's order
    return "".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, help="the built rlflow program")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "cli.md"))
    parser.add_argument("--check", metavar="FILE", help="compare with FILE instead of writing; exit 1 when it differs")
    args = parser.parse_args()
    text = page(args.cli)
    if args.check:
        have = pathlib.Path(args.check).read_text() if pathlib.Path(args.check).exists() else ""
        if have != text:
            import difflib
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), text.splitlines(True), args.check, "rlflow --help"))
            print(f"{args.check} is not the program's --help: run python3 tools/cli_docs.py --cli {args.cli}", file=sys.stderr)
            return 1
        print(f"{args.check} is the program's --help ({text.count('## `')} commands)")
        return 0
    out = pathlib.Path(args.out)
    with tempfile.NamedTemporaryFile("w", dir=out.parent, delete=False, suffix=".tmp") as f:
        f.write(text)
    os.replace(f.name, out)  # never a half-written page
    print(f"wrote {args.out} ({text.count('## `')} commands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
