"""A small booktabs writer: full control over number formatting, no jinja."""

from __future__ import annotations

import math

_ESCAPES = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}"}


def escape(text) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text))


def fmt_ci(mean: float, low: float, high: float, digits: int = 4) -> str:
    """'0.1234 $\\pm$ 0.0100' with the half-width of the interval; just the mean without one."""
    if not math.isfinite(mean):
        return "--"
    if math.isfinite(low) and math.isfinite(high):
        return f"{mean:.{digits}f}\\,{{\\scriptsize$\\pm${(high - low) / 2:.{digits}f}}}"
    return f"{mean:.{digits}f}"


def booktabs(
    header: list[str],
    rows: list[list[str]],
    caption: str,
    label: str,
    align: str | None = None,
    midrules_after: list[int] | None = None,
    header_suffix: dict[str, str] | None = None,
) -> str:
    """A complete table environment; cells are already formatted (header cells are
    escaped, then get their raw-LaTeX suffix from header_suffix, e.g. an arrow)."""
    align = align or "l" * len(header)
    suffix = header_suffix or {}
    head = " & ".join(escape(h) + suffix.get(h, "") for h in header)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        f"\\caption{{{caption}}}",
        f"\\label{{{label}}}",
        f"\\begin{{tabular}}{{{align}}}",
        r"\toprule",
        head + r" \\",
        r"\midrule",
    ]
    for i, row in enumerate(rows):
        lines.append(" & ".join(row) + r" \\")
        if midrules_after and i in midrules_after and i != len(rows) - 1:
            lines.append(r"\midrule")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)
