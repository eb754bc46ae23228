"""Runs one notebook's cells in cling through cppyy (PyPI cppyy-cling); started by run_notebooks.py.

  <python with cppyy> cling_driver.py plan.json

plan.json: {"include_dirs": [...], "cells": [{"file": ..., "source": ...}, ...]}. Each cell's text is
split into preprocessor lines and top-level items; preprocessor lines and declarations (types,
functions, variables: `auto f = [](...) {...};` included) go through cppyy.cppdef (cling's
Declare), so that they live at namespace scope (a lambda declared inside cling's statement wrapper
cannot be used by templates instantiated in later cells), and statements through cppyy.cppexec
(cling's ProcessLine), in order. After each cell the marker of
fluxion_notebook_runner.hpp is printed; compile errors go to stderr as "error: ...".
"""
import json
import re
import sys
import time

DECL_START = re.compile(
    r"^(struct|class|namespace|template|using|typedef|enum|union|static|inline|constexpr|extern|"
    r"BOOST_HANA_ADAPT_STRUCT|BOOST_HANA_DEFINE_STRUCT|BOOST_HANA_ADAPT_ADT)\b")
VARIABLE_DEF = re.compile(
    r"^(const\s+|static\s+|constexpr\s+)*(auto|[A-Za-z_][\w:]*(\s*<[^;=(]*>)?)\s*[&*]*\s+[A-Za-z_]\w*\s*(=|\{|\(|,|;)")
STATEMENT_START = re.compile(r"^(return|for|while|if|do|switch|try|throw|delete|goto|break|continue)\b")
FUNCTION_DEF = re.compile(r"^[\w:<>,\s\*&]+?[\s\*&]+[~\w:]+\s*\([^;{=]*\)\s*(const\s*)?(noexcept\s*)?(->[^{]*)?\{", re.S)


def blank_literals(text):
    """`text` with comments, string and character literals replaced by spaces (same length)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def top_level_items(code):
    """The top-level items of `code` (ending at ';' or a closing '}' at depth 0), as
    (original text, blanked text) pairs."""
    blank = blank_literals(code)
    items, depth, start = [], 0, 0
    for i, ch in enumerate(blank):
        end = None
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if ch == "}" and depth == 0:
                rest = blank[i + 1:].lstrip()
                if not rest.startswith((";", ")", ",", "(", ".", "-", "[")):
                    end = i + 1
        elif ch == ";" and depth == 0:
            end = i + 1
        if end is not None:
            items.append((code[start:end], blank[start:end].strip()))
            start = end
    if blank[start:].strip():
        items.append((code[start:], blank[start:].strip()))
    return [(text, b) for text, b in items if b and b != ";"]


def is_declaration(blank):
    if STATEMENT_START.match(blank):
        return False
    return bool(DECL_START.match(blank) or FUNCTION_DEF.match(blank) or VARIABLE_DEF.match(blank))


def units(code):
    """Consecutive top-level items grouped into ('decl', text) and ('stmt', text) runs."""
    out = []
    for text, blank in top_level_items(code):
        kind = "decl" if is_declaration(blank) else "stmt"
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def segments(source):
    """[(kind, text)]: runs of preprocessor lines ('pp') and of code ('code'), in order."""
    out, kind, buf, continued = [], None, [], False
    for line in source.splitlines():
        k = "pp" if continued or line.lstrip().startswith("#") else "code"
        continued = k == "pp" and line.rstrip().endswith("\\")
        if k != kind and buf:
            out.append((kind, "\n".join(buf) + "\n"))
            buf = []
        kind = k
        buf.append(line)
    if buf:
        out.append((kind, "\n".join(buf) + "\n"))
    return [(k, t) for k, t in out if t.strip()]


def main():
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    import cppyy  # noqa: E402  (after argument handling: the import takes a second)
    for d in plan["include_dirs"]:
        cppyy.add_include_path(d)
    cppyy.cppdef('#include "fluxion_notebook_runner.hpp"\n')
    for cell in plan["cells"]:
        t0 = time.time()
        for kind, text in segments(cell["source"]):
            for unit, part in ([("decl", text)] if kind == "pp" else units(text)):
                try:
                    if unit == "decl":
                        if not cppyy.cppdef(part):
                            raise SyntaxError("cling could not declare the cell's code")
                    else:
                        cppyy.cppexec(part)
                except Exception as e:  # cppyy raises SyntaxError (compile errors) or a C++ exception
                    print(f"error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        cppyy.cppexec("fluxion_notebook::end_of_cell();")
        print(f"cling: {cell['file']}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
