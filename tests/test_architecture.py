"""The library's structure (docs/architecture.md): no import circles, torch-free
evaluator specs, and settings declared once and validated from that declaration."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from fudbench.config.validate import ConfigError, validate_config
from fudbench.evaluators import EVALUATORS, build_evaluator, configured_curves, curve_catalogue, find_curve, spec
from fudbench.core.settings import defaults
from fudbench.config.files import resolve_config

SRC = Path(__file__).resolve().parents[1] / "src"
REPO = SRC.parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """fudbench module -> the fudbench modules it imports anywhere (function-level imports included)."""
    modules = {_module_name(p): p for p in (SRC / "fudbench").rglob("*.py")}
    graph = {m: set() for m in modules}
    for m, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fudbench"):
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[m] |= {t for t in targets if t in modules and t != m}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[v] = min(low[v], index[child])
    return found


# The library's floors, bottom first (docs/architecture.md, "Packages"): a package imports only from
# packages on lower floors, at module level or inside a function; never sideways, never up.
FLOORS = (
    ("core",),
    ("data", "models"),
    ("explainers", "imputers"),
    ("protocols",),
    ("evaluators",),
    ("config",),
    ("analysis", "assets"),
    ("meta",),
    ("report",),
    ("workflow",),
    ("api",),
)


def package_of(module: str) -> str:
    """fudbench.core.masks -> core; fudbench.api -> api; fudbench -> fudbench (the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def floor_violations(graph: dict[str, set[str]], floors=FLOORS) -> list[str]:
    level = {pkg: i for i, floor in enumerate(floors) for pkg in floor}
    out = []
    for module, targets in sorted(graph.items()):
        src = package_of(module)
        if src == "fudbench":  # the root's lazy fudbench.explain / evaluate and the moved-module aliases
            continue
        for target in sorted(targets):
            dst = package_of(target)
            if dst != src and level[dst] >= level[src]:
                out.append(f"{module} -> {target} ({src}, floor {level[src]} -> {dst}, floor {level[dst]})")
    return out


def test_every_package_has_a_floor_and_a_docstring():
    packages = {p.name for p in (SRC / "fudbench").iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in (SRC / "fudbench").glob("*.py") if p.stem != "__init__"}
    assert packages | modules == {pkg for floor in FLOORS for pkg in floor}
    for pkg in packages:
        text = (SRC / "fudbench" / pkg / "__init__.py").read_text()
        assert ast.get_docstring(ast.parse(text)), f"fudbench/{pkg}/__init__.py: say what the package holds"


def test_packages_import_only_from_lower_floors():
    assert floor_violations(import_graph()) == []


def unresolved_imports() -> list[str]:
    """fudbench imports inside the library that name no module file (an old path that only the moved-module
    alias resolves, which the floor check would not see) or are relative."""
    modules = {_module_name(p) for p in (SRC / "fudbench").rglob("*.py")}
    out = []
    for path in sorted((SRC / "fudbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                out.append(f"{path.relative_to(SRC)}:{node.lineno}: a relative import")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fudbench"):
                if node.module not in modules:
                    out.append(f"{path.relative_to(SRC)}:{node.lineno}: from {node.module} (no such module)")
            elif isinstance(node, ast.Import):
                out += [
                    f"{path.relative_to(SRC)}:{node.lineno}: import {a.name} (no such module)"
                    for a in node.names
                    if a.name.startswith("fudbench") and a.name not in modules
                ]
    return out


def test_library_imports_name_modules_that_exist():
    assert unresolved_imports() == []


def test_floor_check_finds_an_upward_and_a_sideways_import():
    graph = {
        "fudbench.core.masks": {"fudbench.report.latex"},
        "fudbench.data.folder": {"fudbench.models.score"},
        "fudbench.report.latex": {"fudbench.core.io"},
    }
    found = floor_violations(graph)
    assert len(found) == 2 and "core, floor 0 -> report" in found[0] and "data, floor 1 -> models" in found[1]


def test_circle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_library_has_no_import_circles():
    assert circles(import_graph()) == []


def test_specs_catalogue_and_config_checks_import_without_torch():
    code = (
        "import sys; import fudbench.analysis.curves, fudbench.config.validate, fudbench.report.paper_tables; "
        "from fudbench.evaluators import EVALUATORS, spec; [spec(m) for m in EVALUATORS]; "
        "print(sorted(m for m in ('torch', 'torchvision', 'captum', 'diffusers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_each_spec_declares_settings_curves_and_a_lazy_build(method):
    s = spec(method)
    assert s.name == method and s.description
    Draft202012Validator.check_schema(s.schema())
    resolved = s.resolve({})
    assert resolved == defaults(s.settings)
    curves = s.curves(resolved)
    assert curves and len({c.name for c in curves}) == len(curves)
    assert all(c.label and isinstance(c.higher_is_better, bool) for c in curves)
    assert s.build == f"{EVALUATORS[method]}:build"
    assert isinstance(s.assets(resolved), set)


def _schema():
    return yaml.safe_load((REPO / "config/schema.yaml").read_text())


def _config(**evaluators):
    config = resolve_config([REPO / "config/smoke.yaml"])
    config["evaluators"] = evaluators
    config["analysis"].pop("meta_metrics")  # the smoke config's metrics need its evaluators
    return config


def test_default_settings_of_every_evaluator_pass_the_config_validation():
    validate_config(_config(**{m: {} for m in EVALUATORS}), REPO / "config/schema.yaml")


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"fud": {"stepz": 5}}, r"evaluators.fud': unknown key\(s\) 'stepz'; allowed keys: .*steps"),
        ({"fud": {"steps": "5"}}, r"evaluators.fud.steps': '5' is not of type 'integer'"),
        ({"road": {"orders": ["morf", "sideways"]}}, r"evaluators.road.orders.1': 'sideways' is not allowed"),
        ({"ffid": {"sparsities": [0.5, 0.25]}}, r"evaluators.ffid.sparsities': \[0.5, 0.25\] must be strictly"),
        ({"distill": {"fills": ["fog"]}}, r"evaluators.distill.fills': unknown imputer\(s\) \['fog'\]"),
        ({"road_x": {"method": "roadd"}}, r"evaluators.road_x.method': unknown evaluator 'roadd'"),
        ({"gevaert": {"imputer_options": {"blurry": {"fraction": 0.5}}}}, r"'method' is a required property"),
    ],
)
def test_bad_evaluator_settings_fail_at_parse_time_naming_the_key(entry, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(_config(**entry), REPO / "config/schema.yaml")


def test_aliased_evaluator_gets_its_own_curve_names_and_labels():
    evaluators = {"road": {}, "road_telea": {"method": "road", "imputer": "telea", "orders": ["morf"]}}
    validate_config(_config(**evaluators), REPO / "config/schema.yaml")
    curves = configured_curves(evaluators)
    assert {"road_morf", "road_lerf", "road_morf@road_telea", "road_morf_accuracy@road_telea"} <= set(curves)
    assert "road_lerf@road_telea" not in curves
    aliased = find_curve("road_morf@road_telea")
    assert aliased.label == "ROAD MoRF [road_telea]" and aliased.higher_is_better is False
    assert find_curve("nonsense@road_telea") is None


def test_aliased_evaluator_records_are_renamed_and_equal_the_plain_ones(cnn_batch):
    model, x, _ = cnn_batch
    y = model(x).argmax(1)
    import torch

    a = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    evaluation = {"ratios": [0.25, 0.75], "reduction": "abs_sum"}
    plain = build_evaluator("idsds", {}, evaluation, {}, "cpu")
    alias = build_evaluator("idsds_probability", {"method": "idsds"}, evaluation, {}, "cpu")
    key = (0, "evaluate", "cnn", "idsds")
    rec_p, samples_p = plain.run(model, x, y, a, [0, 1, 2], key)
    rec_a, samples_a = alias.run(model, x, y, a, [0, 1, 2], key)
    assert set(rec_a["curve"]) == {"idsds@idsds_probability"}
    assert set(samples_a) == {"idsds@idsds_probability", "removed_idsds@idsds_probability"}
    cols = [c for c in rec_p.columns if c not in ("curve", "seconds")]
    assert rec_a[cols].equals(rec_p[cols])


def test_catalogue_knows_every_built_in_curve_once():
    catalogue = curve_catalogue()
    for name in (
        "fud",
        "insertion",
        "deletion",
        "deletion_ratios",
        "sensitivity_n",
        "infidelity",
        "road_morf",
        "idsds",
        "srg_mif__diffusion_plain",
        "mrg__telea",
        "distill__blur",
        "gevaert_ins__sample_average",
        "ffid_plus",
        "road_lerf_accuracy",
    ):
        assert name in catalogue, name
