"""Where a metric added by docs/architecture.md's recipe could be left out (issue 40), and counts
that go stale (issue 46):
- a profile that lists `analysis.meta_metrics` by hand filters the new curve out of
  its meta-evaluation: every profile keeps the default's null (every scored curve);
- a count of the evaluations or a list of the registered evaluators written into
  README.md or docs/*.md goes out of date the day the metric is added: the docs
  name the registry instead, and this test catches a list or a count that comes back,
  in words or in numerals ("x 10 evaluators");
- a count of a profile's jobs, explainers, evaluators, models or images next to its name
  (`config/photos.yaml`, "the default workflow", "the smoke workflow") must be the
  profile's (tools/profile_counts.py generates them), unless the same table cell or
  sentence part dates it with a commit or a date: a measurement of that run, kept as
  measured ("5 min 35 s at commit f609455 (105 jobs then)")."""

import re
from pathlib import Path

import pytest

from fudbench.evaluators import EVALUATORS

REPO = Path(__file__).resolve().parents[1]
# studies/ hold dated measurements (what a run at a commit had); they stay as measured
DOCS = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md"))]
NUMBER_WORDS = "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
# "x ten evaluations", "all eleven evaluators", "the ten metrics", "x 10 evaluators": the whole set, counted
# (a count of a particular few, "the smoke config (four evaluators)", says something else and stays; a
# numeral next to a profile's name is that profile's count, checked below)
COUNT = re.compile(
    rf"(?:\bx|\ball|\bthe|\bevery one of the) (?:{'|'.join(NUMBER_WORDS)}|\d+) "
    rf"(?:registered )?(?:evaluations|evaluators|metrics)\b",
    re.I,
)
LIST_MIN = 8  # a line naming this many registered evaluators is a list of them: it must name them all


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_count_or_partial_list_of_the_evaluators(doc):
    names = set(EVALUATORS)
    problems = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        found = COUNT.search(line)
        number_of = found.group(0).split()[-2] if found else ""
        # a numeral: the registry's count when it is that large (a few, "x 4 evaluators", is a profile's
        # choice), unless a profile is named beside it (its count, checked below)
        if found and not (number_of.isdigit() and (int(number_of) < LIST_MIN or profile_claims(line))):
            problems.append(f"line {number}: a count of the registry ({found.group(0)!r})")
        found = {w for w in re.findall(r"[a-z_]+", line) if w in names}
        if len(found) >= LIST_MIN and found != names:
            problems.append(f"line {number}: lists {len(found)} registered evaluators, not {sorted(names - found)}")
    assert not problems, (
        f"{doc.relative_to(REPO)}: name the registry (fudbench.evaluators.EVALUATORS) instead of "
        f"counting or listing its entries:\n  " + "\n  ".join(problems)
    )


PROFILES = sorted((REPO / "config").glob("*.yaml"))


@pytest.mark.parametrize("profile", [p for p in PROFILES if p.name != "schema.yaml"], ids=lambda p: p.name)
def test_no_profile_filters_the_meta_evaluation_by_hand(profile):
    from fudbench.config.files import resolve_config

    config = resolve_config([profile])
    assert config["analysis"].get("meta_metrics") is None, (
        f"{profile.relative_to(REPO)}: analysis.meta_metrics lists curves by hand, so a metric added by the recipe "
        f"is left out of its meta-evaluation; leave it null (every scored curve)"
    )


# --- counts of a profile, next to its name -----------------------------------------------------------------------

PROFILE_NAMES = (
    (re.compile(r"config/(\w+)\.yaml"), None),
    (re.compile(r"\bdefault (?:workflow|run|profile)\b", re.I), "config"),
    (re.compile(r"\bsmoke (?:workflow|config|profile|run)\b", re.I), "smoke"),
)
KIND_OF = {
    "jobs": "jobs",
    "explainers": "explainers",
    "explainer entries": "explainers",
    "evaluators": "evaluators",
    "evaluator entries": "evaluators",
    "models": "models",
    "images": "images",
}
# "105 jobs", "13 explainers x 2 models x 12 evaluators on 8 images"; not "~1200 jobs", "about 40 jobs"
CLAIM = re.compile(
    r"(?<![~\d.,/])(?<!about )(?<!up to )(\d[\d,]*) ("
    + "|".join(sorted(KIND_OF, key=len, reverse=True))
    + r")\b(?! (?:of a|of each|per|in a|in each)\b)"
)  # "100 images of a shard": a job's share
# a commit (7+ hex digits with a letter and a digit), a date or a past run ("of that time"): the count is
# that run's, as measured
DATED = re.compile(
    r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b|\b20\d\d-\d\d-\d\d\b"
    r"|\b(?:of that time|at the time|then|would)\b"
)  # "would": a what-if, not the profile
# `config/paper.yaml + an overlay`, "the smoke config without `fud`": another config, not the profile's counts
COMBINED = re.compile(r"^`?\s*(?:\+|without\b)")


def profile_claims(line: str) -> list:
    """[(profile, [(kind, count), ...])] of a line: per table cell (or the whole line), the counts after
    each profile name, up to the next; a cell with a commit or a date is a dated measurement (none);
    a cell of a table row without a profile name takes the row's first one."""
    cells = line.split("|") if line.lstrip().startswith("|") else [line]
    row_profile = None
    out = []
    for cell in cells:
        marks = sorted(
            (m.start(), m.group(1) if name is None else name)
            for pattern, name in PROFILE_NAMES
            for m in pattern.finditer(cell)
            if not COMBINED.match(cell[m.end() :])
        )
        if marks and row_profile is None:
            row_profile = marks[0][1]
        if DATED.search(cell):
            continue
        if not marks and row_profile is not None and len(cells) > 1:
            marks = [(0, row_profile)]
        for k, (start, profile) in enumerate(marks):
            end = marks[k + 1][0] if k + 1 < len(marks) else len(cell)
            counts = [(KIND_OF[m.group(2)], int(m.group(1).replace(",", ""))) for m in CLAIM.finditer(cell[start:end])]
            if counts:
                out.append((profile, counts))
    return out


def test_a_count_of_the_registry_in_numerals_is_caught_too(tmp_path, monkeypatch):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "runs on 2 models x 10 evaluators\nthe paper's 4 evaluators\n"
        "default workflow (13 explainers x 2 models x 12 evaluators)\n"
    )
    with pytest.raises(AssertionError, match=r"line 1: a count of the registry \('x 10 evaluators'\)") as err:
        monkeypatch.setattr("test_new_metric_reach.REPO", tmp_path)
        test_no_count_or_partial_list_of_the_evaluators(doc)
    assert "line 2" not in str(err.value) and "line 3" not in str(err.value)


def test_profile_claims_are_found_per_cell():
    row = (
        "| default workflow (108 jobs: 13 explainers x 2 models x 12 evaluators on 8 images) | 5 min 35 s at "
        "commit f609455 (105 jobs then) |"
    )
    assert profile_claims(row) == [
        ("config", [("jobs", 108), ("explainers", 13), ("models", 2), ("evaluators", 12), ("images", 8)])
    ]
    assert profile_claims("`config/photos.yaml` (33 jobs) and `config/your_own.yaml` (34 jobs)") == [
        ("photos", [("jobs", 33)]),
        ("your_own", [("jobs", 34)]),
    ]
    assert profile_claims("the paper profile: `-n` builds ~1200 jobs") == []
    assert profile_claims("the default run of that time (16 images)") == []
    assert profile_claims("(config/paper.yaml + an overlay): 4 explainers") == []
    assert profile_claims("a real run of the smoke config without `fud` (66 jobs)") == []
    assert profile_claims("smoke workflow alone (85 jobs) | 3 min | ./fud snakemake") == [("smoke", [("jobs", 85)])]


def text_units(text: str) -> list:
    """[(line number, unit)]: each table row, and each sentence of the prose (paragraphs joined across
    their lines, so that a count and the profile it belongs to are read together); code blocks skipped."""
    units, paragraph, start, code = [], [], 0, False

    def flush():
        if paragraph:
            units.extend((start, sentence) for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])", " ".join(paragraph)))
        paragraph.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            flush()
            code = not code
        elif code:
            continue
        elif line.lstrip().startswith("|"):
            flush()
            units.append((number, line))
        elif not line.strip() or line.startswith("#"):
            flush()
        else:
            if not paragraph:
                start = number
            paragraph.append(line.strip())
    flush()
    return units


def test_a_count_and_its_profile_are_read_across_lines():
    units = text_units("The default run went from an hour to 15 min\n(116 jobs instead of 496). Later.\n\n| x |\n")
    assert units[0] == (1, "The default run went from an hour to 15 min (116 jobs instead of 496).")
    assert profile_claims(units[0][1]) == [("config", [("jobs", 116)])]
    assert units[-1] == (4, "| x |")


def _profile_claims_in_docs() -> list:
    found = []
    for doc in DOCS:
        for number, unit in text_units(doc.read_text(encoding="utf-8")):
            for profile, counts in profile_claims(unit):
                if (REPO / "config" / f"{profile}.yaml").is_file():
                    found += [(doc, number, profile, kind, n) for kind, n in counts]
    return found


CLAIMS = _profile_claims_in_docs()


def test_config_counts_next_to_a_profile_are_the_profiles():
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    from profile_counts import config_counts

    wrong = [
        f"{doc.relative_to(REPO)} line {number}: {n} {kind} for config/{profile}.yaml, which has "
        f"{config_counts(profile)[kind]}"
        for doc, number, profile, kind, n in CLAIMS
        if kind != "jobs" and config_counts(profile)[kind] != n
    ]
    assert not wrong, (
        "counts typed next to a profile's name are not the profile's; write its current counts "
        "(./fud python tools/profile_counts.py) or date the measurement (commit, date):\n  " + "\n  ".join(wrong)
    )


@pytest.mark.workflow
@pytest.mark.parametrize("profile", sorted({c[2] for c in CLAIMS if c[3] == "jobs"}))
def test_job_counts_next_to_a_profile_are_its_dry_runs(profile):
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    from profile_counts import job_count

    jobs = job_count(profile)
    wrong = [
        f"{doc.relative_to(REPO)} line {number}: {n} jobs"
        for doc, number, p, kind, n in CLAIMS
        if p == profile and kind == "jobs" and n != jobs
    ]
    assert not wrong, (
        f"config/{profile}.yaml runs {jobs} jobs from nothing (Snakemake's dry run; "
        f"./fud python tools/profile_counts.py --jobs {profile}), not:\n  " + "\n  ".join(wrong)
    )
