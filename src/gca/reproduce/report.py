"""Reporting: mean ± std per cell from the stored runs, tables beside the paper's numbers, and Figure 4."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from ..datasets import LoadedDataset
from ..io import atomic_write_text
from ..names import canonical_name
from .baselines import BASELINES
from .execute import DatasetCache
from .paper import PAPER_TABLE3, PAPER_TABLE4
from .plan import Cell, Mode
from .store import RunStore


def accuracy(record: dict[str, Any] | None) -> float | None:
    """The test accuracy (%) a run record holds, or ``None`` (not finished, or diverged)."""
    if not record or not record.get("accuracy"):
        return None
    return float(record["accuracy"]["mean"])


class Reporter:
    """Reads finished runs and writes tables and figures; knows nothing about how runs are made."""

    def __init__(self, out: Path, store: RunStore, datasets: DatasetCache, mode: Mode,
                 unavailable: dict[str, str]) -> None:  # fmt: skip
        self.out = out
        self.store = store
        self.datasets = datasets
        self.mode = mode
        self.unavailable = unavailable

    def summary(self, cell: Cell) -> dict[str, Any]:
        """mean ± std over the cell's finished runs, or why there is no number."""
        loaded = self.datasets.get(cell.dataset)
        if not isinstance(loaded, LoadedDataset):
            return {"status": "skipped", "reason": loaded}
        method = cell.runs[0].method if cell.runs else "gca"
        if method in self.unavailable:
            return {"status": "not run", "reason": self.unavailable[method]}
        training = _training(cell)
        records = [self.store.get(r) for r in cell.runs]
        errors = [r["error"] for r in records if r and r.get("error")]
        values = [v for v in map(accuracy, records) if v is not None]
        if not values:
            return {"status": "failed" if errors else "missing", "reason": errors[0] if errors else "no finished runs",
                    "training": training}  # fmt: skip
        return {"status": "ok", "mean": float(np.mean(values)), "std": float(np.std(values)), "runs": len(values),
                "failed_runs": len(errors), "training": training}  # fmt: skip

    def notes(self, datasets: list[str]) -> list[str]:
        notes = [f"Mode: {self.mode.describe()}. Each run trains with seed i and is judged on split i "
                 "(random 10/10/80 %, or the public split i where a dataset has them) by ℓ2-regularised logistic "
                 "regression, C chosen on the split's validation nodes; mean ± std over runs.",
                 "⚠: ours and the paper's differ by more than 2·√(s² + s_paper²). Paper numbers: Zhu et al., WWW "
                 "2021 (none for datasets outside the paper, e.g. Cora)."]  # fmt: skip
        for ds in datasets:
            loaded = self.datasets.get(ds)
            if not isinstance(loaded, LoadedDataset):
                notes.append(f"Skipped {ds}: {loaded}")
        by_reason: dict[str, list[str]] = {}
        for method, reason in self.unavailable.items():
            by_reason.setdefault(reason, []).append(BASELINES[method][0])
        for reason, labels in by_reason.items():
            notes.append(f"† {', '.join(labels)}: not run here — {reason}.")
        return notes

    def training_notes(self, cells: list[Cell], datasets: list[str]) -> list[str]:
        """Which training made the GCA rows of each dataset, when ``--fast`` sent some to mini-batches."""
        by_dataset: dict[str, set[str]] = {}
        for cell in cells:
            if cell.runs and cell.runs[0].method == "gca" and dict(cell.runs[0].settings).get("epochs"):
                by_dataset.setdefault(cell.dataset, set()).add(_training(cell))
        if not any(t != "exact" for kinds in by_dataset.values() for t in kinds):
            return []
        said = "; ".join(f"{ds}: {', '.join(sorted(by_dataset[ds]))}" for ds in datasets if ds in by_dataset)
        return [f"Training of the trained GCA rows (--fast, chosen from each graph's size and the device; mini-batch "
                f"runs keep Table 5's number of updates): {said}. Baselines train as without --fast."]  # fmt: skip

    def _by_label(self, cells: list[Cell]) -> dict[str, dict[str, dict[str, Any]]]:
        table: dict[str, dict[str, dict[str, Any]]] = {}
        for cell in cells:
            table.setdefault(cell.label, {})[cell.dataset] = self.summary(cell)
        return table

    def table3(self, cells: list[Cell], datasets: list[str]) -> list[Path]:
        data_used = {cell.label: cell.info["data"] for cell in cells}
        rows = [(label, [data_used[label]], by_ds) for label, by_ds in self._by_label(cells).items()]
        notes = [*self.notes(datasets), *self.training_notes(cells, datasets),
                 "GCN and GAT are supervised (trained end to end on the split's training labels)."]  # fmt: skip
        write_table(self.out / "table3", "Table 3 — node classification accuracy (%)", rows,
                    ["Method", "Training data"], datasets, PAPER_TABLE3, notes)  # fmt: skip
        return [self.out / "table3.md", self.out / "table3.csv"]

    def table4(self, cells: list[Cell], datasets: list[str]) -> list[Path]:
        info = {cell.label: cell.info for cell in cells}
        rows = [(label, [info[label]["topology"], info[label]["attribute"]], by_ds)
                for label, by_ds in self._by_label(cells).items()]  # fmt: skip
        notes = [*self.notes(datasets), *self.training_notes(cells, datasets),
                 "Degree centrality in every variant; GCA–T–A is GRACE (uniform removal and masking)."]  # fmt: skip
        write_table(self.out / "table4", "Table 4 — ablation: accuracy (%)", rows,
                    ["Variant", "Topology", "Attribute"], datasets, PAPER_TABLE4, notes)  # fmt: skip
        return [self.out / "table4.md", self.out / "table4.csv"]

    def figure4(self, cells: list[Cell], datasets: list[str]) -> list[Path]:
        from .figures import sensitivity_heatmap

        written = []
        grid = self.mode.grid
        for ds in datasets:
            if not isinstance(self.datasets.get(ds), LoadedDataset):
                continue
            mine = [c for c in cells if c.dataset == ds]
            values = np.full((len(grid), len(grid)), np.nan)
            lines = ["p_e,p_f,mean,std,runs,status"]
            for cell in mine:
                s = self.summary(cell)
                i, j = grid.index(cell.info["p_e"]), grid.index(cell.info["p_f"])
                if s["status"] == "ok":
                    values[i, j] = s["mean"]
                    lines.append(f"{cell.info['p_e']},{cell.info['p_f']},{s['mean']:.4f},{s['std']:.4f},{s['runs']},ok")
                else:
                    lines.append(f"{cell.info['p_e']},{cell.info['p_f']},,,0,{s['status']}")
            stem = self.out / f"figure4-{canonical_name(ds)}"
            atomic_write_text(stem.with_suffix(".csv"), "\n".join(lines) + "\n")
            epochs = dict(mine[0].runs[0].settings)["epochs"] if mine and mine[0].runs else "?"
            title = (f"GCA-DE on {ds}: accuracy (%) vs augmentation strength\n"
                     f"({self.mode.grid_runs} run(s) per cell, {epochs} epochs)")  # fmt: skip
            sensitivity_heatmap(values, grid, grid, stem.with_suffix(".png"), title)
            written += [stem.with_suffix(".csv"), stem.with_suffix(".png")]
        return written


def _training(cell: Cell) -> str:
    """The training that made a cell's runs: ``exact`` or the mini-batch setting ``--fast`` chose; ``""`` for a
    baseline."""
    if not cell.runs or cell.runs[0].method != "gca":
        return ""
    settings = dict(cell.runs[0].settings)
    return settings.get("training", "exact") if settings.get("epochs") else "untrained"


def _fmt(summary: dict[str, Any]) -> str:
    if summary["status"] == "ok":
        return f"{summary['mean']:.2f} ± {summary['std']:.2f}"
    return {"skipped": "skipped", "not run": "not run†", "failed": "diverged", "missing": "—"}[summary["status"]]


def differs(summary: dict[str, Any], paper: tuple[float, float] | None) -> bool:
    """More than two standard deviations apart, the two std's combined: |m − m_p| > 2·√(s² + s_p²)."""
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
) -> str:
    """Markdown and CSV: per dataset our mean ± std beside the paper's, ⚠ where they differ by > 2σ."""
    header = leading + [f"{ds} ({kind})" for ds in datasets for kind in ("ours", "paper")]
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table = [["method", *[h.lower().replace(" ", "_") for h in leading[1:]], "dataset", "mean", "std", "runs",
              "paper_mean", "paper_std", "differs_by_more_than_2_std", "status", "reason", "training"]]  # fmt: skip
    for label, lead, by_dataset in rows:
        cells = [label, *lead]
        for ds in datasets:
            summary = by_dataset[ds]
            ref = paper.get(label, {}).get(ds)
            flag = differs(summary, ref)
            cells.append(_fmt(summary) + (" ⚠" if flag else ""))
            cells.append(f"{ref[0]:.2f} ± {ref[1]:.2f}" if ref else "—")
            ok = summary["status"] == "ok"
            table.append([
                label, *lead, ds, f"{summary['mean']:.4f}" if ok else "", f"{summary['std']:.4f}" if ok else "",
                summary.get("runs", 0), f"{ref[0]:.2f}" if ref else "", f"{ref[1]:.2f}" if ref else "",
                str(flag).lower(), summary["status"], summary.get("reason", ""), summary.get("training", ""),
            ])  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *notes]
    markdown = "\n".join(lines) + "\n"
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    atomic_write_text(path_stem.with_suffix(".md"), markdown)
    atomic_write_text(path_stem.with_suffix(".csv"), buffer.getvalue())
    return markdown
