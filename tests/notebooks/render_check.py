#!/usr/bin/env python3
"""Renders each notebook's stored outputs as a person sees them and checks the page.

For every notebook (notebooks/*.ipynb unless named), with no cell executed:
  1. `jupyter-nbconvert --to html` of the stored outputs, with the lab template of
     tests/notebooks/templates/fluxion_lab (SVG outputs shown as <img>, as JupyterLab and
     nbconvert >= 7 do: Debian 12's nbconvert 6.5 strips inline SVG drawings to an empty box);
  2. the page opened in headless Chromium: a probe script reports every output image (loaded and
     decoded, inside the page width) and the page height; then a screenshot of the whole page,
     1200 pixels wide, kept in --out (default ./render_check) and printed;
  3. checks: the screenshot is a PNG that is not blank (decoded here with zlib: enough distinct
     colours); no error text in the outputs of cells not tagged `raises-exception` (compiler
     errors and warnings, "Traceback", "JIT session error", ...); every stored image/svg+xml and
     image/png output is an image of the page, identical to the stored one; each notebook shows
     at least MIN_IMAGES[notebook] images.

  render_check.py [--root REPO] [--out DIR] [notebook.ipynb ...]
  render_check.py --self-test [--out DIR]     the checks catch broken pages (synthetic notebooks)

Exit status: 0 every notebook passed, 1 a failure (each is named), 77 Chromium or nbconvert is
missing (Debian: apt-get install chromium jupyter-nbconvert). Python 3 standard library only.
"""
import argparse
import base64
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "templates")

# The least number of images (plots, Jaxpr drawings) each notebook's page must show. A notebook
# not listed needs none; its other checks still run.
MIN_IMAGES = {
    "01-tour": 1,                    # the Jaxpr drawing
    "02-hessian-of-a-network": 1,    # loss curve, Hessian heatmap, spectrum
    "03-per-sample-gradients": 1,    # gradient-norm histogram
    "04-physics": 1,                 # trajectory, energy against time
    "05-inside-fluxion": 2,          # Jaxpr drawings before and after the passes
}

PAGE_WIDTH = 1200
MAX_PAGE_HEIGHT = 16000        # taller pages are cut in the screenshot (the probe still sees all)
MIN_COLOURS = 16               # a rendered page has text antialiasing: hundreds of colours
IMAGE_MIMES = ("image/svg+xml", "image/png", "image/jpeg")

# Text that must not appear in the outputs of cells that are not expected to fail.
ERROR_TEXT = re.compile(
    r"(^|\s|:)(fatal )?error:|\bwarning: |Traceback \(most recent call last\)|JIT session error|"
    r"Failed to materialize|In file included from|terminate called|Segmentation fault|Aborted",
    re.M)


def nbconvert_binary():
    """Debian's jupyter-nbconvert (its own Python has nbconvert; `python3` on PATH may not)."""
    for candidate in ("/usr/bin/jupyter-nbconvert", shutil.which("jupyter-nbconvert")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


# ---- the notebook's stored outputs ----

def stored_images(notebook):
    """[(cell number, mime, bytes)] of every stored image output, in page order."""
    images = []
    for index, cell in enumerate(notebook.get("cells", [])):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for mime in IMAGE_MIMES:
                if mime in data:
                    value = data[mime]
                    value = "".join(value) if isinstance(value, list) else value
                    raw = value.encode() if mime == "image/svg+xml" else base64.b64decode(value)
                    images.append((index, mime, raw))
                    break  # the page shows one representation per output
    return images


# ---- the page: output text per cell, output images ----

class PageParser(html.parser.HTMLParser):
    """Collects the text of each cell's outputs (with the cell's tags) and the output images."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []            # (tag, classes) of the open elements
        self.cells = []            # {"tags": set, "text": [str]} per cell, in page order
        self.images = []           # (src, inline svg) of images inside output areas
        self.in_inline_svg = 0

    def _inside(self, cls):
        return any(cls in classes for _, classes in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        if tag in ("br", "img", "meta", "link", "input", "hr"):
            if tag == "img" and self._inside("jp-OutputArea-output"):
                self.images.append((attrs.get("src") or "", False))
            return
        if "jp-Cell" in classes:
            self.cells.append({"tags": {c[len("celltag_"):] for c in classes if c.startswith("celltag_")},
                               "text": []})
        if tag == "svg" and self._inside("jp-OutputArea-output") and not self.in_inline_svg:
            self.images.append(("", True))
        if tag == "svg":
            self.in_inline_svg += 1
        self.stack.append((tag, classes))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "img", "meta", "link", "input", "hr"):
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):  # tolerate unclosed elements
            if self.stack[k][0] == tag:
                del self.stack[k:]
                break
        if tag == "svg":
            self.in_inline_svg = max(0, self.in_inline_svg - 1)

    def handle_data(self, data):
        if self.cells and self._inside("jp-OutputArea-output"):
            self.cells[-1]["text"].append(data)


def image_bytes(src, page_dir):
    """The bytes an <img src> shows: a data: URI decoded, or a file next to the page."""
    if src.startswith("data:"):
        header, _, payload = src.partition(",")
        return base64.b64decode(payload) if header.endswith(";base64") else payload.encode()
    path = os.path.join(page_dir, src)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    return None


# ---- the screenshot: PNG decoding with zlib ----

def png_pixels(path):
    """(width, height, channels, rows of unfiltered bytes) of an 8-bit RGB/RGBA/grey PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour_type)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {colour_type}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytes(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        previous = unfilter(kind, line, previous, channels)
        rows.append(previous)
    return width, height, channels, rows


def _bytewise_add(a, b):
    """Bytes a[i] + b[i] mod 256, with big-integer arithmetic (no carries between bytes)."""
    n = len(a)
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    low = int.from_bytes(b"\x7f" * n, "big")
    high = int.from_bytes(b"\x80" * n, "big")
    return (((x & low) + (y & low)) ^ ((x ^ y) & high)).to_bytes(n, "big")


def unfilter(kind, line, previous, bpp):
    """One row of PNG filtering undone (filters None, Sub, Up, Average, Paeth)."""
    if kind == 0:
        return bytes(line)
    if kind == 2:
        return _bytewise_add(line, previous)
    if kind == 1:  # prefix sums along the row, per channel: log2(width) shifted additions
        out, shift = bytes(line), bpp
        while shift < len(out):
            out = _bytewise_add(out, bytes(shift) + out[:-shift])
            shift *= 2
        return out
    out = bytearray(line)
    for i in range(len(out)):
        left = out[i - bpp] if i >= bpp else 0
        up = previous[i]
        if kind == 3:
            out[i] = (out[i] + ((left + up) >> 1)) & 0xFF
        else:
            up_left = previous[i - bpp] if i >= bpp else 0
            p = left + up - up_left
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
            predictor = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
            out[i] = (out[i] + predictor) & 0xFF
    return bytes(out)


def distinct_colours(path, limit=256):
    """The number of distinct pixel values of a PNG (counting stops at `limit`)."""
    _, _, channels, rows = png_pixels(path)
    colours = set()
    for row in rows:
        colours.update(row[i:i + channels] for i in range(0, len(row), channels))
        if len(colours) >= limit:
            break
    return len(colours)


# ---- Chromium ----

PROBE = """
<script>
window.addEventListener("load", function () {
  var report = {images: [], height: document.documentElement.scrollHeight, width: window.innerWidth};
  document.querySelectorAll(".jp-OutputArea-output img, .jp-OutputArea-output > svg").forEach(function (e) {
    var r = e.getBoundingClientRect();
    var loaded = e.tagName.toLowerCase() === "img" ? (e.complete && e.naturalWidth > 0) : r.width > 0;
    report.images.push({loaded: loaded, left: r.left, right: r.right, width: r.width, height: r.height});
  });
  var pre = document.createElement("pre");
  pre.id = "fluxion-render-probe";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
});
</script>
"""


def run_chromium(chromium, args, profile):
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={profile}"] + args
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)


def probe_page(chromium, page, profile):
    """Chromium's report on the page: its height and each output image's state and box."""
    probe_path = page[:-len(".html")] + ".probe.html"
    with open(page, encoding="utf-8") as f:
        text = f.read()
    at = text.rfind("</body>")
    with open(probe_path, "w", encoding="utf-8") as f:
        f.write(text[:at] + PROBE + text[at:] if at >= 0 else text + PROBE)
    result = run_chromium(chromium, ["--dump-dom", "--virtual-time-budget=10000",
                                     f"--window-size={PAGE_WIDTH},800", "file://" + probe_path], profile)
    os.remove(probe_path)
    m = re.search(r'<pre id="fluxion-render-probe">(.*?)</pre>', result.stdout, re.S)
    if not m:
        raise RuntimeError("Chromium did not run the page's probe script (exit %d): %s"
                           % (result.returncode, result.stderr[-2000:]))
    return json.loads(html.unescape(m.group(1)))


# ---- one notebook ----

def check_notebook(path, out_dir, nbconvert, chromium, profile, template="fluxion_lab"):
    """Renders one notebook; returns (problems, screenshot path)."""
    name = os.path.splitext(os.path.basename(path))[0]
    problems = []
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    page_dir = os.path.join(out_dir, name)
    os.makedirs(page_dir, exist_ok=True)
    result = subprocess.run([nbconvert, "--to", "html", f"--TemplateExporter.extra_template_basedirs={TEMPLATES}",
                             "--template", template, "--output-dir", page_dir, "--output", name, path],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    page = os.path.join(page_dir, name + ".html")
    if result.returncode != 0 or not os.path.isfile(page):
        return [f"nbconvert failed (exit {result.returncode}):\n{result.stdout[-3000:]}"], None
    with open(page, encoding="utf-8") as f:
        parser = PageParser()
        parser.feed(f.read())

    # Error text in the outputs of cells that are expected to succeed.
    for number, cell in enumerate(parser.cells, 1):
        if "raises-exception" in cell["tags"]:
            continue
        text = "".join(cell["text"])
        m = ERROR_TEXT.search(text)
        if m:
            at = m.end() - 1  # inside the matched text (the match may start at the preceding newline)
            end = text.find("\n", at)
            line = text[text.rfind("\n", 0, at) + 1:end if end >= 0 else len(text)]
            problems.append(f"cell {number} of the page shows error text: {line.strip()[:300]!r}")

    # Every stored image is an image of the page, with the same bytes.
    shown = [image_bytes(src, page_dir) if not inline else None for src, inline in parser.images]
    for index, mime, raw in stored_images(notebook):
        if raw in shown:
            shown.remove(raw)
        else:
            problems.append(f"the {mime} output of cell {index + 1} is not an image of the page")

    # What the browser shows: images loaded, inside the page width, at least MIN_IMAGES of them.
    report = probe_page(chromium, page, profile)
    images = report["images"]
    for k, image in enumerate(images, 1):
        if not image["loaded"]:
            problems.append(f"output image {k} did not load in Chromium")
        elif image["width"] <= 0 or image["height"] <= 0:
            problems.append(f"output image {k} has an empty box ({image['width']}x{image['height']})")
        elif image["right"] > report["width"] + 1:
            problems.append(f"output image {k} is wider than the page: its right edge is at "
                            f"{image['right']:.0f}px of {report['width']}px")
    need = MIN_IMAGES.get(name, 0)
    if len(images) < need:
        problems.append(f"the page shows {len(images)} images, fewer than the {need} in MIN_IMAGES")

    # The screenshot: a PNG of the whole page (up to MAX_PAGE_HEIGHT), not blank.
    height = max(200, min(int(report["height"]) + 20, MAX_PAGE_HEIGHT))
    shot = os.path.join(out_dir, name + ".png")
    if os.path.exists(shot):
        os.remove(shot)
    result = run_chromium(chromium, [f"--screenshot={shot}", f"--window-size={PAGE_WIDTH},{height}",
                                     "--virtual-time-budget=10000", "file://" + page], profile)
    if not os.path.isfile(shot):
        problems.append(f"Chromium wrote no screenshot (exit {result.returncode}): {result.stderr[-1000:]}")
        return problems, None
    try:
        colours = distinct_colours(shot)
        if colours < MIN_COLOURS:
            problems.append(f"the screenshot is blank: {colours} distinct colours (fewer than {MIN_COLOURS})")
    except (ValueError, zlib.error, struct.error) as e:
        problems.append(f"the screenshot is not a readable PNG: {e}")
    return problems, shot


# ---- self-test: the checks fail when they should ----

def write_png(path, width, height, pixel):
    """An RGB PNG whose pixel (x, y) is pixel(x, y), a 3-byte value (unfiltered rows)."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    raw = b"".join(b"\0" + b"".join(pixel(x, y) for x in range(width)) for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def self_test(nbconvert, chromium, out_dir, profile):
    """Checks a notebook that must pass and variants that must fail; returns the failed expectations."""
    work = os.path.join(out_dir, "self-test")
    os.makedirs(work, exist_ok=True)
    gradient = os.path.join(work, "gradient.png")
    write_png(gradient, 64, 32, lambda x, y: bytes((4 * x, 8 * y, 128)))
    with open(gradient, "rb") as f:
        png = base64.b64encode(f.read()).decode()
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="300pt" height="100pt" viewBox="0 0 300 100" '
           'style="max-width: 100%; height: auto"><rect width="300" height="100" fill="teal"/></svg>')

    def code(outputs, tags=()):
        return {"cell_type": "code", "execution_count": 1, "metadata": {"tags": list(tags)},
                "source": "f(x);", "outputs": outputs}

    def stream(text):
        return {"output_type": "stream", "name": "stdout", "text": text}

    def image(mime, data):
        return {"output_type": "display_data", "metadata": {}, "data": {mime: data, "text/plain": "<image>"}}

    error = {"output_type": "error", "ename": "fluxion::ShapeError", "evalue": "error: shapes differ",
             "traceback": ["error: shapes differ"]}
    good = [code([stream("[1. 2.]\n")]), code([image("image/svg+xml", svg)]), code([image("image/png", png)]),
            code([error], tags=["raises-exception"])]
    cases = {  # name: (cells, template, the problems expected, as regular expressions)
        "good": (good, "fluxion_lab", []),
        "error-text": (good + [code([stream("cell.cpp:3:1: error: use of undeclared identifier 'y'\n")]),
                               code([error])], "fluxion_lab", [r"cell 5 .*error text", r"cell 6 .*error text"]),
        "broken-image": ([code([image("image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'><g></svg")])],
                         "fluxion_lab", [r"output image 1 did not load"]),
        "too-wide": ([code([image("image/svg+xml", svg.replace(' style="max-width: 100%; height: auto"', "")
                                  .replace("300pt", "1500pt"))])], "fluxion_lab", [r"wider than the page"]),
        "inline-svg-stripped": (good, "lab", [r"image/svg\+xml output of cell 2 is not an image"]),
    }
    failures = []
    for name, (cells, template, expected) in cases.items():
        path = os.path.join(work, name + ".ipynb")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, f)
        problems, _ = check_notebook(path, work, nbconvert, chromium, profile, template)
        for pattern in expected:
            if not any(re.search(pattern, p) for p in problems):
                failures.append(f"self-test {name}: expected a problem matching {pattern!r}, got {problems}")
        unexpected = [p for p in problems if not any(re.search(pattern, p) for pattern in expected)]
        if unexpected:
            failures.append(f"self-test {name}: unexpected problems {unexpected}")
    blank = os.path.join(work, "blank.png")
    write_png(blank, 40, 30, lambda x, y: b"\xff\xff\xff")
    if distinct_colours(blank) != 1 or distinct_colours(gradient) < MIN_COLOURS:
        failures.append("self-test: distinct_colours misreads a blank or a gradient PNG")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.normpath(os.path.join(HERE, "..", "..")))
    parser.add_argument("--out", default=os.path.abspath("render_check"),
                        help="where the pages and screenshots go (default ./render_check)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that the checks fail on broken pages (synthetic notebooks), then exit")
    parser.add_argument("notebooks", nargs="*")
    args = parser.parse_args()
    notebooks = args.notebooks or sorted(
        os.path.join(args.root, "notebooks", f) for f in os.listdir(os.path.join(args.root, "notebooks"))
        if f.endswith(".ipynb"))
    nbconvert, chromium = nbconvert_binary(), chromium_binary()
    missing = [what for what, found in (("jupyter-nbconvert", nbconvert), ("chromium", chromium)) if not found]
    if missing:
        print(f"render_check: skipped, {' and '.join(missing)} not installed "
              "(Debian: apt-get install chromium jupyter-nbconvert)")
        return 77
    os.makedirs(args.out, exist_ok=True)
    if args.self_test:
        with tempfile.TemporaryDirectory(prefix="fluxion-chromium-") as profile:
            failures = self_test(nbconvert, chromium, os.path.abspath(args.out), profile)
        for failure in failures:
            print(failure)
        print(f"render_check self-test: {'FAILED' if failures else 'ok'}")
        return 1 if failures else 0
    failed = 0
    with tempfile.TemporaryDirectory(prefix="fluxion-chromium-") as profile:
        for path in notebooks:
            name = os.path.basename(path)
            try:
                problems, shot = check_notebook(path, os.path.abspath(args.out), nbconvert, chromium, profile)
            except (OSError, RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                problems, shot = [f"{type(e).__name__}: {e}"], None
            if shot:
                print(f"{name}: screenshot {shot}")
            for problem in problems:
                print(f"{name}: FAIL {problem}")
            print(f"{name}: {'ok' if not problems else 'FAILED'}")
            failed += bool(problems)
    print(f"render_check: {len(notebooks) - failed} of {len(notebooks)} notebooks passed; pages and screenshots in "
          f"{os.path.abspath(args.out)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
