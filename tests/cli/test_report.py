"""``colbench report DIR... [--html FILE]``."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser

import pytest

from cli.conftest import make_run
from colbench.cli.main import main
from colbench.report import _html as report_html
from colbench.report import load_run, register_episode_section, render_html, write_html
from colbench.rundir import RunDir


def tiny_png(rgb: tuple[int, int, int]) -> bytes:
    """A 2x2 PNG of one colour."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class PageParser(HTMLParser):
    """Collects what matters for safety: URLs the page would load, scripts, episodes."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.scripts = 0
        self.episodes: list[dict[str, str]] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href", "action", "srcset", "poster", "data"):
            if attrs.get(name):
                self.urls.append(attrs[name])
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "details" and "episode" in (attrs.get("class") or ""):
            self.episodes.append(attrs)


def parse(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    return parser


def test_text_table_side_by_side(capsys, mixed_run, no_ask_run):
    assert main(["report", str(mixed_run), str(no_ask_run), "-v"]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split()
    assert header[:5] == ["run", "env", "model", "episodes", "errors"]
    assert header[-2:] == ["turns", "questions"]
    mixed = next(line for line in out if line.startswith(str(mixed_run)))
    no_ask = next(line for line in out if line.startswith(str(no_ask_run)))
    assert "scripted:asker" in mixed and "scripted:no-ask" in no_ask
    # asker: 4 ok, 1 error, 100% success, 2 turns and 1 question each.
    assert mixed.split()[3:5] == ["4", "1"] and "100.0" in mixed
    assert mixed.split()[-2:] == ["2.00", "1.00"]
    assert no_ask.split()[-2:] == ["1.00", "0.00"]


def test_the_table_marks_each_runs_task_set(tmp_path, capsys, mixed_run, guess_env_id):
    # Three of the same split's tasks: another task set of the same split.
    fewer = make_run(tmp_path / "fewer", guess_env_id, "scripted:asker", 3)
    assert main(["report", str(mixed_run), str(fewer), "-v"]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out[0].index("task-set")  # columns are padded: the cell starts where it does
    cells = [next(line for line in out if line.startswith(str(run)))[start:].split()[0]
             for run in (mixed_run, fewer)]
    refs = [RunDir(run).load_summary().task_set for run in (mixed_run, fewer)]
    assert cells == [f"{ref.name}@{ref.hash.split(':')[1][:8]}" for ref in refs]
    assert cells[0] != cells[1] and refs[0].hash != refs[1].hash


def test_html_page_holds_every_episode_escaped_and_self_contained(tmp_path, mixed_run,
                                                                  no_ask_run, capsys):
    run = tmp_path / "hostile"
    shutil.copytree(mixed_run, run)
    lines = (run / "episodes.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["turns"][0]["action"] = '<script>alert("x")</script><img src="http://evil/x.png">'
    record["turns"][0]["next_observation"] = "5 < 6 & \"quoted\""
    lines[0] = json.dumps(record)
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n")

    page_path = tmp_path / "out" / "report.html"
    assert main(["report", str(run), str(no_ask_run), "--html", str(page_path)]) == 0
    assert f"wrote {page_path} (10 episodes)" in capsys.readouterr().out
    page = page_path.read_text()
    parsed = parse(page)
    assert parsed.scripts == 1  # ours; the agent's <script> is text
    assert parsed.urls == []  # nothing to fetch: no src, href or action at all
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "5 &lt; 6 &amp; &quot;quoted&quot;" in page
    assert "default-src 'none'" in page  # the CSP forbids any request the page might try
    assert len(parsed.episodes) == 10
    statuses = {(e["data-run"], e["data-task"]): (e["data-status"], e["data-outcome"])
                for e in parsed.episodes}
    assert statuses[("0", "guess-test-001")] == ("error", "env-error")
    assert statuses[("0", "guess-test-000")] == ("ok", "success")
    assert {o for (r, _), (_, o) in statuses.items() if r == "1"} <= {"success", "failure"}
    assert "always fails" in page  # the error text is on the page
    assert "My number is" in page and "What is your number?" in page


def pictured_run(tmp_path, mixed_run):
    """The mixed run with pictures: under the first episode's first turn a PNG outside the
    run directory and a missing one, a target render inside the run directory (relative path)
    and the outside PNG again as the final render."""
    run = tmp_path / "pictures"
    shutil.copytree(mixed_run, run)
    (run / "target.png").write_bytes(tiny_png((255, 0, 0)))
    final = tmp_path / "elsewhere" / "final.png"
    final.parent.mkdir()
    final.write_bytes(tiny_png((0, 0, 255)))
    lines = (run / "episodes.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["turns"][0]["info"]["images"] = [str(final), "gone.png"]
    record["metrics"]["target_image"] = "target.png"  # relative to the run directory
    record["turns"][-1]["info"]["final_image"] = str(final)
    lines[0] = json.dumps(record)
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return run, final


# Was "images are embedded": renders now sit in files beside the page (issue 17, item 6),
# since embedding made a 1,000-episode frontend report hundreds of MB.
def test_images_are_files_beside_the_page_and_target_and_final_sit_side_by_side(tmp_path,
                                                                                mixed_run):
    run, final = pictured_run(tmp_path, mixed_run)
    page_path = write_html([load_run(run)], tmp_path / "out" / "report.html")
    page = page_path.read_text()
    parsed = parse(page)
    assert "data:image" not in page
    assert all(src.startswith("report_assets/") for src in parsed.images)
    shown = [(page_path.parent / src).read_bytes() for src in parsed.images]
    assert shown.count(final.read_bytes()) == 2  # under its turn, and as the final render
    assert shown.count((run / "target.png").read_bytes()) == 1
    assert len(set(parsed.images)) == 2  # the final render is stored once
    assert "image missing:" in page and "gone.png" in page
    compare = page[page.index('<div class="compare">'):]
    assert compare.index("target</figcaption>") < compare.index("final</figcaption>")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_a_moved_page_still_shows_its_images_in_a_browser(tmp_path, mixed_run):
    run, _ = pictured_run(tmp_path, mixed_run)
    built = write_html([load_run(run)], tmp_path / "built" / "report.html")
    moved = tmp_path / "moved"
    shutil.move(built.parent, moved)  # the page and its assets folder, together
    # Load every picture the page shows under its own Content-Security-Policy.
    probe = ("<script>document.querySelectorAll('img').forEach(function(img){"
             "var p=new Image();p.onload=function(){document.body.insertAdjacentHTML("
             "'beforeend','<p class=loaded>'+p.naturalWidth+'</p>')};"
             "p.onerror=function(){document.body.insertAdjacentHTML('beforeend',"
             "'<p class=failed></p>')};p.src=img.getAttribute('src');});</script>")
    page = moved / "report.html"
    page.write_text(page.read_text().replace("</body>", probe + "</body>"))
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--virtual-time-budget=5000", "--dump-dom",
         page.as_uri()], capture_output=True, text=True, timeout=60).stdout
    assert dom.count('<p class="loaded">2</p>') == 3  # 2x2 PNGs, three references
    assert 'class="failed"' not in dom


def test_suites_can_add_a_section_to_each_episode(mixed_run, monkeypatch):
    monkeypatch.setattr(report_html, "_SECTIONS", [])

    @register_episode_section
    def questions(record, ctx):
        return f'<p class="asked">asked {record.metrics.get("questions", 0)} <b>q</b></p>'

    page = render_html([load_run(mixed_run)])
    assert page.count('<p class="asked">asked 1 <b>q</b></p>') == 4


def test_an_interrupted_run_is_reported_as_partial(tmp_path, mixed_run, capsys):
    run = tmp_path / "killed"
    shutil.copytree(mixed_run, run)
    (run / "summary.json").unlink()
    assert main(["report", str(run), "-v"]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.startswith(f"{run} (partial)") and "scripted:asker" in row
    assert row.split()[4:6] == ["4", "1"]


def test_report_errors_name_the_problem(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no colbench run in it or in any folder below it" in capsys.readouterr().err


def test_an_assets_folder_of_someone_elses_is_refused_by_name(tmp_path, mixed_run, capsys):
    folder = tmp_path / "report_assets"
    folder.mkdir()
    (folder / "holiday.png").write_bytes(tiny_png((0, 0, 0)))
    assert main(["report", str(mixed_run), "--html", str(tmp_path / "report.html")]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and "not written by 'colbench report'" in err
    assert not (tmp_path / "report.html").exists() and len(list(folder.iterdir())) == 1


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_filters_work_in_a_browser(tmp_path, mixed_run):
    page = render_html([load_run(mixed_run)])
    # Choose "env error" in the outcome filter, as a person would, then read back the DOM.
    choose = ("<script>var f=document.getElementById('filters');"
              "f.elements.outcome.value='env-error';f.dispatchEvent(new Event('change'));</script>")
    path = tmp_path / "page.html"
    path.write_text(page.replace("</body>", choose + "</body>"))
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=60).stdout
    shown = parse(dom).episodes
    visible = [e["data-task"] for e in shown if "hidden" not in e]
    assert visible == ["guess-test-001"]
    assert "1 of 5 episodes shown" in dom
