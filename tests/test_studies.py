"""studies/ (issue 57): the lab notebook beside the product. Each study keeps its committed tables
byte for byte (studies/CHECKSUMS.sha256: the sha256 of every file that was under docs/results/ at
7b02f45, with its new path), and the commands its record gives still run from the repository's root:
the overlay stacks validate, the files named exist, the study's tools answer --help."""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "studies"
CHECKSUMS = STUDIES / "CHECKSUMS.sha256"
# the files of docs/results/ at 7b02f45 (79) that were edited when they moved instead of kept byte for byte:
# the records (their paths and commands updated, merged into each study's README) and one overlay's comments
EDITED = {
    "docs/results/endpoint/README.md": "studies/round3_endpoint/README.md",
    "docs/results/round4/README.md": "studies/round4/README.md",
    "docs/results/cue/README.md": "studies/planted_cue/README.md",
    "docs/results/meta/README.md": "studies/meta_profile_runs/README.md",
    "docs/results/cue/run_2026-11-25_n8/README.md": "studies/planted_cue/results/run_2026-11-25_n8/README.md",
    "docs/results/cue/n_eval16.yaml": "studies/planted_cue/n_eval16.yaml",
}
MOVED_FROM_DOCS_RESULTS = 79
# tables committed after the move (listed in CHECKSUMS.sha256 too, but not among the 79 moved ones)
ADDED_AFTER_THE_MOVE = ("studies/round4/results/corrections/", "studies/round5/results/")
ROOTS = ("config/", "studies/", "tools/", "bench/", "scripts/")


def checksums(path: Path = CHECKSUMS) -> dict[str, str]:
    """{path relative to the repository: sha256}, from `sha256sum` format lines."""
    out = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found = re.fullmatch(r"([0-9a-f]{64})  (\S.*)", line)
        assert found, f"{path.name} line {number} is not '<sha256>  <path>': {line!r}"
        out[found.group(2)] = found.group(1)
    return out


def mismatches(listed: dict[str, str], root: Path = REPO) -> list[str]:
    wrong = []
    for rel, digest in listed.items():
        path = root / rel
        if not path.is_file():
            wrong.append(f"{rel}: missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            wrong.append(f"{rel}: its bytes changed (sha256 {hashlib.sha256(path.read_bytes()).hexdigest()})")
    return wrong


def test_every_committed_table_is_at_its_new_place_with_its_bytes():
    listed = checksums()
    moved = [rel for rel in listed if not rel.startswith(ADDED_AFTER_THE_MOVE)]
    assert len(moved) + len(EDITED) == MOVED_FROM_DOCS_RESULTS
    assert not set(listed) & set(EDITED.values())
    wrong = mismatches(listed)
    assert not wrong, "committed tables must keep their bytes (git mv, never rewrite):\n  " + "\n  ".join(wrong)
    assert all((REPO / new).is_file() for new in EDITED.values())


def test_the_checksum_check_fails_on_a_changed_or_missing_file(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    listed = {"a.csv": hashlib.sha256(b"x,y\n1,2\n").hexdigest(), "b.csv": "0" * 64}
    assert mismatches(listed, tmp_path) == ["b.csv: missing"]
    (tmp_path / "a.csv").write_text("x,y\n1,3\n")
    assert mismatches(listed, tmp_path)[0].startswith("a.csv: its bytes changed")


def test_every_table_under_a_study_results_folder_is_listed():
    """A study's results/ holds committed tables: each one in CHECKSUMS.sha256 (README.md files are
    records, edited as paths move); docs/results/ is gone."""
    listed = set(checksums())
    found = {
        str(p.relative_to(REPO))
        for p in STUDIES.glob("*/results/**/*")
        if p.is_file() and p.name != "README.md" and "__pycache__" not in p.parts
    }
    assert found - listed == set(), f"tables not in studies/CHECKSUMS.sha256: {sorted(found - listed)}"
    assert not (REPO / "docs" / "results").exists()


def test_every_study_has_a_record_and_the_index_names_it():
    index = (STUDIES / "README.md").read_text(encoding="utf-8")
    folders = sorted(p for p in STUDIES.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert {p.name for p in folders} >= {"round3_endpoint", "round4", "planted_cue", "oracle_ties", "meta_profile_runs"}
    for folder in folders:
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder.relative_to(REPO)} has no README.md (its record)"
        text = readme.read_text(encoding="utf-8")
        assert "Question" in text and "What ran" in text, f"{readme.relative_to(REPO)}: no question or what ran"
        assert f"]({folder.name}/README.md)" in index, f"studies/README.md does not link {folder.name}"


def _code_lines(text: str) -> list[str]:
    """The lines of the record's code blocks (indented by 4 or fenced), continuations joined."""
    lines, fenced, out = text.splitlines(), False, []
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            stripped = line.strip()
            if out and out[-1].endswith("\\"):
                out[-1] = out[-1][:-1] + " " + stripped
            else:
                out.append(stripped)
    return [re.sub(r"\s+#.*$", "", line) for line in out]


def record_commands() -> list[tuple[str, list[str]]]:
    """(study, argv) of every `./fud ...` command in a code block of a study's README."""
    found = []
    for readme in sorted(STUDIES.glob("*/README.md")):
        for line in _code_lines(readme.read_text(encoding="utf-8")):
            if line.startswith("./fud "):
                found.append((readme.parent.name, shlex.split(line)))
    return found


COMMANDS = record_commands()


def test_the_records_give_commands():
    studies = {study for study, _ in COMMANDS}
    assert studies >= {"round3_endpoint", "round4", "planted_cue", "oracle_ties", "meta_profile_runs"}


def test_the_files_a_record_command_names_exist():
    missing = [
        f"studies/{study}/README.md: {' '.join(argv)}: {arg}"
        for study, argv in COMMANDS
        for arg in argv
        if arg.startswith(ROOTS) and re.search(r"\.(ya?ml|py|sh)$", arg) and not (REPO / arg).is_file()
    ]
    assert not missing, "a command in a study's record names a file that is not there:\n  " + "\n  ".join(missing)


def overlay_stacks() -> list[tuple[str, ...]]:
    """The --configfile stacks of the records' `./fud run` commands (files under config/ or studies/)."""
    stacks = set()
    for _, argv in COMMANDS:
        if argv[1] != "run" or "--configfile" not in argv:
            continue
        files = []
        for arg in argv[argv.index("--configfile") + 1 :]:
            if arg.startswith("-"):
                break
            files.append(arg)
        if files and all(f.startswith(("config/", "studies/")) for f in files):
            stacks.add(tuple(files))
    return sorted(stacks)


def test_the_study_overlays_are_among_the_commands():
    named = {f for stack in overlay_stacks() for f in stack}
    overlays = {str(p.relative_to(REPO)) for p in STUDIES.glob("*/*.yaml")}
    assert overlays - named == set(), f"overlays no record command runs: {sorted(overlays - named)}"


@pytest.mark.parametrize("stack", overlay_stacks(), ids=lambda s: "+".join(Path(f).stem for f in s))
def test_each_overlay_stack_of_a_record_validates(stack):
    """As `./fud run --configfile STACK` would (fudbench.config.files.run_config, then the Snakefile's
    validate_config), and without a hand-made meta_metrics list (tests/test_new_metric_reach.py)."""
    from fudbench.config.files import SCHEMA, run_config
    from fudbench.config.validate import validate_config

    config = validate_config(run_config([REPO / f for f in stack]), SCHEMA)
    assert config["analysis"].get("meta_metrics") is None


def study_tools() -> list[Path]:
    return sorted(p for p in STUDIES.glob("*/*.py") if "__main__" in p.read_text(encoding="utf-8"))


def test_every_study_tool_is_in_a_record_command():
    named = {arg for _, argv in COMMANDS if argv[1] == "python" for arg in argv[2:3]}
    tools = {str(p.relative_to(REPO)) for p in study_tools()}
    assert tools and tools - named == set(), f"study tools no record command runs: {sorted(tools - named)}"


@pytest.mark.parametrize("tool", study_tools(), ids=lambda p: p.name)
def test_each_study_tool_answers_help_from_the_repository_root(tool):
    res = subprocess.run(
        [sys.executable, str(tool.relative_to(REPO)), "--help"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0 and "usage:" in res.stdout, (res.stdout + res.stderr)[-2000:]


def test_the_meta_evaluation_page_describes_today_and_links_its_studies():
    """docs/meta_evaluation.md is the reference of the machinery as it works now (issue 57: at most 400
    lines); the history is in the studies it links."""
    page = (REPO / "docs" / "meta_evaluation.md").read_text(encoding="utf-8")
    assert len(page.splitlines()) <= 400
    for study in ("round3_endpoint", "round4", "planted_cue", "oracle_ties", "meta_profile_runs"):
        assert f"(../studies/{study}/README.md)" in page, f"docs/meta_evaluation.md does not link studies/{study}"
