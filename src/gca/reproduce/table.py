"""The tables of a reproduction: a cell's number as the table shows it (mean ± std and its marks), the paper's
number beside it, the test of whether the two differ, and the Markdown and CSV files of a table
(:func:`write_table`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_write_text
from .paper import PAPER_OOM
from .plan import plural

#: The mark of a number whose authors' probe had not converged (best check its last on most splits).
UNCONVERGED = "◊"


def _fmt(summary: dict[str, Any], regime: bool = False) -> str:
    """A cell: mean ± std (no spread for one value), ‡ when shortened, ◊ when its probe had not converged, and with
    ``regime`` "(mini-batch)" after a number trained in mini-batches."""
    if summary["status"] == "ok":
        number = f"{summary['mean']:.2f}" + (f" ± {summary['std']:.2f}" if summary["n"] > 1 else "")
        failed = summary.get("failed_runs", 0)
        marks = [
            " (mini-batch)" if regime and _mini_batch(summary) else "",
            " ‡" if summary.get("shortened") else "",
            f" {UNCONVERGED}" if summary.get("unconverged") else "",
            f" ({failed} of {failed + summary['runs']} trainings failed)" if failed else "",
        ]
        return number + "".join(marks)
    return {"skipped": "skipped", "not run": "not run†", "failed": "failed", "missing": "—"}[summary["status"]]


def _paired(a: dict[str, Any], b: dict[str, Any]) -> str:
    """``+1.23 ± 0.45 (20 pairs)``: the mean ± std of ``a``'s values minus ``b``'s, paired by (seed, split)."""
    pairs = sorted(set(a["values"]) & set(b["values"]))
    if not pairs:
        return ""
    gains = np.array([a["values"][k] - b["values"][k] for k in pairs])
    spread = f" ± {np.std(gains):.2f}" if len(gains) > 1 else ""
    return f"{np.mean(gains):+.2f}{spread} ({plural(len(gains), 'pair')})"


def _mini_batch(summary: dict[str, Any]) -> bool:
    return str(summary.get("training", "")).startswith("mini-batch")


def _paper_cell(ref: tuple[float, float] | None, oom: bool, shortened: bool) -> str:
    """The paper's number as the paper's table gives it: no spread where it has none (a deterministic row)."""
    if ref is None:
        return "OOM" if oom else "—"
    text = f"{ref[0]:.2f}" + (f" ± {ref[1]:.2f}" if ref[1] else "")
    return text + (" (not compared)" if shortened else "")


#: The legend of ⚠, under a table with a cell that carries it.
FLAG_LEGEND = "⚠: ours and the paper's differ by more than 2·√(s² + s_paper²)."
#: What the paper's column is, under a table that shows a paper number.
PAPER_LEGEND = {
    True: "Paper numbers: Zhu et al., WWW 2021, under the same protocol (none for datasets outside the paper, e.g. "
    "Cora).",
    False: "The paper's numbers (Zhu et al., WWW 2021) were measured under the authors' protocol; beside these they "
    "are shown for reference, not compared (gca reproduce without --eval-protocol judges as the paper did).",
}


def differs(summary: dict[str, Any], paper: tuple[float, float] | None) -> bool:
    """More than two standard deviations apart, the two std's combined: |m − m_p| > 2·√(s² + s_p²), m and s the
    ``summary``'s (:meth:`Reporter.summary`) ``mean`` and ``std``, (m_p, s_p) the ``paper``'s; ``False`` unless the
    summary's status is ``ok`` and the paper has a number."""
    if paper is None or summary["status"] != "ok":
        return False
    spread = float(np.hypot(summary["std"], paper[1]))
    return abs(summary["mean"] - paper[0]) > 2 * max(spread, 1e-9)


def write_table(
    path_stem: Path,
    title: str,
    rows: list[tuple[str, list[str], dict[str, dict[str, Any]]]],
    leading: list[str],
    datasets: list[str],
    paper: dict[str, dict[str, tuple[float, float]]],
    notes: list[str],
    comparable: bool = True,
) -> str:
    """Markdown and CSV: per dataset our mean ± std beside the paper's, ⚠ where they differ by > 2σ — only where
    the two are ``comparable`` (the same protocol) and the row was not shortened (‡). Returns the Markdown.

    Parameters
    ----------
    path_stem
        The files' path without suffix: ``<path_stem>.md`` and ``<path_stem>.csv`` are written (atomically).
    rows
        One per table row: its label (the paper's row name), its leading columns' values, and dataset → the cell's
        summary (:meth:`Reporter.summary`).
    leading
        The names of the columns before the datasets' (``["Method", "Training data"]``); the first names the
        label's column.
    paper
        Row label → dataset → the paper's (mean, std) (:data:`~gca.reproduce.paper.PAPER_TABLE3`); a missing entry
        is shown as ``—``, or ``OOM`` where the paper ran out of memory.
    notes
        Paragraphs under the table; then what the paper's column is, where the table shows a paper number, and the
        legend of ⚠, where a cell carries it.
    comparable
        Whether the runs were judged as the paper's were; if not, no number is compared and the paper's column says so.
    """
    kind = "paper" if comparable else "paper, authors' protocol: not comparable"
    header = leading + [f"{ds} ({k})" for ds in datasets for k in ("ours", kind)]
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table = [
        [
            "method",
            *[h.lower().replace(" ", "_") for h in leading[1:]],
            "dataset",
            "mean",
            "std",
            "n_values",
            "runs",
            "failed_runs",
            "paper_mean",
            "paper_std",
            "compared",
            "differs_by_more_than_2_std",
            "status",
            "reason",
            "training",
            "shortened",
            "seconds",
            "probe_best_at_last_check",
            "probe_unconverged",
        ]
    ]
    shown = flagged = False  # a paper number in the table; a cell flagged ⚠
    for label, lead, by_dataset in rows:
        # a row trained in mini-batches on every dataset says so in its name; a row that is on some says it per cell
        trained = [by_dataset[ds] for ds in datasets if by_dataset[ds]["status"] == "ok"]
        all_mini = bool(trained) and all(map(_mini_batch, trained))
        cells = [f"{label} (mini-batch)" if all_mini else label, *lead]
        for ds in datasets:
            summary = by_dataset[ds]
            ref = paper.get(label, {}).get(ds)
            compared = comparable and ref is not None and not summary.get("shortened")
            flag = compared and differs(summary, ref)
            shown, flagged = shown or ref is not None, flagged or flag
            cells.append(_fmt(summary, regime=not all_mini) + (" ⚠" if flag else ""))
            cells.append(_paper_cell(ref, (label, ds) in PAPER_OOM, bool(summary.get("shortened"))))
            ok = summary["status"] == "ok"
            last, judged = summary.get("probe_last", (0, 0))
            table.append(
                [
                    cells[0],
                    *lead,
                    ds,
                    f"{summary['mean']:.4f}" if ok else "",
                    f"{summary['std']:.4f}" if ok and summary["n"] > 1 else "",
                    summary.get("n", 0),
                    summary.get("runs", 0),
                    summary.get("failed_runs", 0),
                    f"{ref[0]:.2f}" if ref else "",
                    f"{ref[1]:.2f}" if ref else "",
                    str(compared).lower(),
                    str(flag).lower(),
                    summary["status"],
                    summary.get("reason", ""),
                    summary.get("training", ""),
                    summary.get("shortened", ""),
                    f"{summary['seconds']:.1f}" if ok else "",
                    f"{last}/{judged}" if judged else "",
                    str(bool(summary.get("unconverged"))).lower() if judged else "",
                ]
            )
        lines.append("| " + " | ".join(cells) + " |")
    notes = [*notes, *([PAPER_LEGEND[comparable]] if shown else []), *([FLAG_LEGEND] if flagged else [])]
    for note in notes:  # each its own paragraph
        lines += ["", note]
    markdown = "\n".join(lines) + "\n"
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    atomic_write_text(path_stem.with_suffix(".md"), markdown)
    atomic_write_text(path_stem.with_suffix(".csv"), buffer.getvalue())
    return markdown
