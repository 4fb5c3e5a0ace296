#!/usr/bin/env python3
"""Extracts relay POIs from the cases of PyCG's micro-benchmark with
extract.py's pois_of (the same POIs as testdata/python/pois.ndjson's).

A case is a directory holding callgraph.json; its files are the *.py files
under it. Writes one JSON object per line to standard output, cases and
files in sorted order:

    {"case": "<case dir relative to ROOT>", "fileId": "<file relative to the case>", "pois": [...]}

or, for a file Python's ast does not parse, "error" in place of "pois".

With --modules, each file with top-level code besides its definitions gets
one more POI for that code, the module's own body, which PyCG's call graphs
name after the module ("main" calls what main.py's top level calls):
a function_definition named __module__ with id "<file>:1:" (an empty
qualified name), lineNumber 1, and as rawCode the file with every line of
its top-level def and class statements (decorators included) left empty,
so that line numbers stay and their bodies stay theirs.

Usage: python3 pycg_extract.py [--modules] ROOT   (ROOT: PyCG's micro-benchmark/snippets)
"""
import ast
import json
import pathlib
import sys

from extract import pois_of


def module_poi(rel, src):
    lines = src.splitlines()
    for node in ast.parse(src).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            for i in range(start - 1, node.end_lineno):
                lines[i] = ""
    code = "\n".join(lines).rstrip()
    if not code.strip():
        return None
    return {"id": f"{rel}:1:", "type": "function_definition", "name": "__module__", "filePath": rel,
            "lineNumber": 1, "rawCode": code}


def main():
    args = sys.argv[1:]
    modules = "--modules" in args
    root = pathlib.Path([a for a in args if a != "--modules"][0])
    out = sys.stdout
    for cg in sorted(root.rglob("callgraph.json")):
        case_dir = cg.parent
        case = case_dir.relative_to(root).as_posix()
        for path in sorted(case_dir.rglob("*.py")):
            rel = path.relative_to(case_dir).as_posix()
            rec = {"case": case, "fileId": rel}
            try:
                src = path.read_text(encoding="utf-8")
                rec["pois"] = pois_of(rel, src)
                if modules and (m := module_poi(rel, src)) is not None:
                    rec["pois"].append(m)
            except (SyntaxError, UnicodeDecodeError, ValueError) as e:
                rec["error"] = f"{type(e).__name__}: {e}"
            out.write(json.dumps(rec, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
