"""Each rule's conda env provides every third-party module its script imports.

For every rule with a `script:`, the test follows the script's imports and,
through the library, the module-level imports of every fudbench module it
reaches (imports that run when the job starts), and checks that the rule's
`conda:` env file lists a package providing each third-party module. Imports
inside library functions (lazy ones, e.g. captum in build_infid) are checked
for the torch env only, which every rule that calls them uses.
"""

import ast
import re
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
# import name -> pip package name where they differ
PACKAGE_OF = {
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "skimage": "scikit-image",
    "cv2": "opencv-python-headless",
    "pytorch_grad_cam": "grad-cam",
}
STDLIB = set(sys.stdlib_module_names) | {"_fudbench_path", "snakemake"}


def env_packages(name: str) -> set[str]:
    spec = yaml.safe_load((REPO / "envs" / name).read_text())
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict) and "pip" in d)
    packages = {re.split(r"[=<>!]", p)[0].strip().lower() for p in pip}
    # Snakemake runs <env>.post-deploy.sh in the new env: what it pip-installs counts too
    post = REPO / "envs" / name.replace(".yaml", ".post-deploy.sh")
    if post.exists():
        for line in re.findall(r"pip install ([^\n]+)", post.read_text()):
            packages |= {re.split(r"[=<>!]", w)[0].lower() for w in line.split() if not w.startswith("-")}
    return packages


def rule_scripts() -> dict[str, tuple[str, str]]:
    """rule name -> (env file, script path), parsed from rules/*.smk."""
    envs = dict(re.findall(r'^(ENV_\w+) = "\.\./envs/([\w.]+)"', (REPO / "rules/common.smk").read_text(), re.M))
    out = {}
    for smk in (REPO / "rules").glob("*.smk"):
        for block in re.split(r"\n(?=\s*rule \w+:)", smk.read_text()):
            m = re.search(r"rule (\w+):", block)
            script = re.search(r'script:\s*\n\s*"\.\./(scripts/[\w.]+)"', block)
            env = re.search(r"conda:\s*\n\s*(ENV_\w+)", block)
            if m and script:
                assert env, f"rule {m.group(1)} in {smk.name} names no conda env"
                out[m.group(1)] = (envs[env.group(1)], script.group(1))
    return out


def _imports(path: Path, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _module_file(name: str) -> Path | None:
    base = REPO / "src" / Path(*name.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.exists():
            return p
    return None


def third_party_imports(script: Path) -> set[str]:
    """Top-level third-party modules imported when the job starts."""
    seen, todo, found = set(), [(script, False)], set()
    while todo:
        path, top_only = todo.pop()
        for name in _imports(path, top_only):
            root = name.split(".")[0]
            if root == "fudbench":
                parts = name.split(".")
                for k in range(1, len(parts) + 1):  # a package's __init__ runs too
                    f = _module_file(".".join(parts[:k]))
                    if f and f not in seen:
                        seen.add(f)
                        todo.append((f, True))
            elif root not in STDLIB and root != "__future__":
                found.add(root)
    if "parquet" in script.read_text():
        found.add("pyarrow")  # pandas' parquet engine
    return found


RULES = rule_scripts()


def test_every_script_rule_was_found():
    assert {"evaluate", "explain", "train_classifier", "table", "quality"} <= set(RULES)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_env_provides_its_imports(rule):
    env, script = RULES[rule]
    provided = env_packages(env)
    missing = {m for m in third_party_imports(REPO / script) if PACKAGE_OF.get(m, m).lower() not in provided}
    assert not missing, f"rule {rule} ({script}) imports {sorted(missing)} but envs/{env} does not provide them"


def test_torch_env_provides_every_library_import():
    provided = env_packages("torch.yaml")
    needed = set()
    for f in (REPO / "src" / "fudbench").rglob("*.py"):
        needed |= {n.split(".")[0] for n in _imports(f, top_level_only=False)}
    needed -= STDLIB | {"fudbench", "__future__"}
    missing = {m for m in needed if PACKAGE_OF.get(m, m).lower() not in provided}
    assert not missing, f"envs/torch.yaml lacks {sorted(missing)}"
