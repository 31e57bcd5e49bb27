"""Where a metric added by docs/architecture.md's recipe could be left out (issue 40):
- a profile that lists `analysis.meta_metrics` by hand filters the new curve out of
  its meta-evaluation: every profile keeps the default's null (every scored curve);
- a count of the evaluations or a list of the registered evaluators written into
  README.md or docs/*.md goes out of date the day the metric is added: the docs
  name the registry instead, and this test catches a list or a count that comes back."""
import re
from pathlib import Path

import pytest

from fudbench.evaluators import EVALUATORS

REPO = Path(__file__).resolve().parents[1]
# docs/results/ holds dated measurements (what a run at a commit had); they stay as measured
DOCS = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md"))]
NUMBER_WORDS = "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
# "x ten evaluations", "all eleven evaluators", "the ten metrics": the whole set, counted (a count of a
# particular few, "the smoke config (four evaluators)", says something else and stays)
COUNT = re.compile(rf"(?:\bx|\ball|\bthe|\bevery one of the) (?:{'|'.join(NUMBER_WORDS)}) "
                   rf"(?:registered )?(?:evaluations|evaluators|metrics)\b", re.I)
LIST_MIN = 8  # a line naming this many registered evaluators is a list of them: it must name them all


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_count_or_partial_list_of_the_evaluators(doc):
    names = set(EVALUATORS)
    problems = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if COUNT.search(line):
            problems.append(f"line {number}: a count in words ({COUNT.search(line).group(0)!r})")
        found = {w for w in re.findall(r"[a-z_]+", line) if w in names}
        if len(found) >= LIST_MIN and found != names:
            problems.append(f"line {number}: lists {len(found)} registered evaluators, not {sorted(names - found)}")
    assert not problems, (f"{doc.relative_to(REPO)}: name the registry (fudbench.evaluators.EVALUATORS) instead of "
                          f"counting or listing its entries:\n  " + "\n  ".join(problems))


PROFILES = sorted((REPO / "config").glob("*.yaml"))


@pytest.mark.parametrize("profile", [p for p in PROFILES if p.name != "schema.yaml"], ids=lambda p: p.name)
def test_no_profile_filters_the_meta_evaluation_by_hand(profile):
    from fudbench.configfiles import resolve_config

    config = resolve_config([profile])
    assert config["analysis"].get("meta_metrics") is None, (
        f"{profile.relative_to(REPO)}: analysis.meta_metrics lists curves by hand, so a metric added by the recipe "
        f"is left out of its meta-evaluation; leave it null (every scored curve)")
