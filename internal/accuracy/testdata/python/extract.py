#!/usr/bin/env python3
"""Extracts relay POIs from the Python files under src/ with Python's ast,
as a backend analyzer would, and writes pois.ndjson (one analysis per file).

One POI per module-level or nested function (function_definition), method
(method_definition: a def directly in a class body), class
(class_declaration) and import statement (import, named after its first
imported name). rawCode is the definition's exact source, decorators
included; ids are "<file>:<line>:<qualified name>".

Run from this directory: python3 extract.py
"""
import ast
import json
import pathlib

ROOT = pathlib.Path(__file__).parent / "src"


def pois_of(rel, src):
    lines = src.splitlines(keepends=True)
    tree = ast.parse(src)
    out = []

    def code(node):
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return start, "".join(lines[start - 1:node.end_lineno]).rstrip("\n")

    def add(node, typ, name, qual):
        line, raw = code(node)
        out.append({"id": f"{rel}:{line}:{qual}", "type": typ, "name": name, "filePath": rel,
                    "lineNumber": line, "rawCode": raw})

    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = prefix + node.name
                add(node, "method_definition" if in_class else "function_definition", node.name, qual)
                visit(node.body, qual + ".", False)
            elif isinstance(node, ast.ClassDef):
                qual = prefix + node.name
                add(node, "class_declaration", node.name, qual)
                visit(node.body, qual + ".", True)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not prefix:
                first = node.names[0]
                add(node, "import", (first.asname or first.name).split(".")[-1], "import." + first.name)

    visit(tree.body, "", False)
    return out


def main():
    with open(pathlib.Path(__file__).parent / "pois.ndjson", "w") as f:
        for path in sorted(ROOT.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            f.write(json.dumps({"fileId": rel, "pois": pois_of(rel, path.read_text())}, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
