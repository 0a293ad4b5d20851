"""Reporting: mean ± std per cell from the stored runs, tables beside the paper's numbers, and Figure 4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..choices import canonical_name
from ..config import build_config
from ..datasets import LoadedDataset
from ..errors import option
from ..io import atomic_write_text
from ..stderr import spoken
from .baselines import BASELINES, SHORTENED_IN_QUICK
from .execute import DatasetCache, failed_run
from .paper import PAPER_TABLE3, PAPER_TABLE4
from .plan import SECOND_OPINION, TRAINED_TWIN, Cell, Mode, plural
from .store import RunStore
from .table import UNCONVERGED, _mini_batch, _paired, write_table
from .table import differs as differs


def accuracy(record: dict[str, Any] | None) -> float | None:
    """The test accuracy (%) a run record holds, or ``None`` (not finished, or failed)."""
    if not record or not record.get("accuracy"):
        return None
    return float(record["accuracy"]["mean"])


def split_accuracies(record: dict[str, Any] | None, key: str = "accuracy") -> list[float]:
    """The test accuracy (%) on each split that judged a run, in the order of its splits (empty: no number).

    Parameters
    ----------
    key
        The judgement read: ``accuracy`` (the reproduction's protocol), or
        :data:`~gca.reproduce.plan.SECOND_OPINION` (gca's probe on the same splits).
    """
    if not record or not isinstance(record.get(key), dict):
        return []
    values = record[key].get("runs")
    return [float(v) for v in values] if values else [float(record[key]["mean"])]


def best_at_last_check(record: dict[str, Any] | None, key: str = "accuracy") -> tuple[int, int]:
    """Under the authors' protocol: (splits whose best validation check was the probe's last, splits); (0, 0) when
    the record does not say (another protocol, a supervised baseline); ``key`` as in :func:`split_accuracies`."""
    judged = record.get(key) if record else None
    if not isinstance(judged, dict) or not judged.get("last_check") or "chosen_epoch" not in judged:
        return 0, 0
    chosen = judged["chosen_epoch"]
    return sum(int(e) == int(judged["last_check"]) for e in chosen), len(chosen)


#: How each protocol is said under a table.
PROTOCOL_WORDS = {
    "authors": "the authors' protocol (their evaluation script, behind the paper's numbers: a linear layer trained "
    "with Adam for 3,000 epochs on the unnormalised embeddings, test accuracy at the best of the "
    "validation checks made every 20 epochs)",
    "sklearn": "gca's sklearn protocol (ℓ2-regularised logistic regression on ℓ2-normalised embeddings, C chosen on "
    "the split's validation nodes)",
}


class Reporter:
    """Reads finished runs and writes tables and figures; knows nothing about how runs are made. Every note under a
    table is made from the runs it reads: what trained, how long, how it was judged.

    Parameters
    ----------
    datasets
        The datasets; one that could not be loaded is a ``skipped`` cell and a note.
    unavailable
        Baseline key → why it cannot run here (the executor's, filled as it runs): its cells read ``not run†``
        and the reason is a note.
    left_out
        Baselines not asked for; quick mode names them in a note.
    """

    def __init__(
        self,
        out: Path,
        store: RunStore,
        datasets: DatasetCache,
        mode: Mode,
        unavailable: dict[str, str],
        left_out: list[str] | None = None,
    ) -> None:
        self.out = out
        self.store = store
        self.datasets = datasets
        self.mode = mode
        self.unavailable = unavailable
        self.left_out = list(left_out or [])  # baselines not asked for

    def summary(self, cell: Cell) -> dict[str, Any]:
        """mean ± std over the values of the cell's finished runs (one per training and split), or why there is no
        number. ``values`` keys each value by (seed, split number), which pairs it with another row's."""
        loaded = self.datasets.get(cell.dataset)
        if not isinstance(loaded, LoadedDataset):
            return {"status": "skipped", "reason": loaded}
        method = cell.runs[0].method if cell.runs else "gca"
        if method in self.unavailable:
            return {"status": "not run", "reason": self.unavailable[method]}
        key = cell.info.get("judge", "accuracy")
        records = [(run, self.store.get(run)) for run in cell.runs]
        training = _training(cell, [r for _, r in records if r])
        errors = [r["error"] for _, r in records if r and r.get("error")]
        values = {(run.seed, j): v for run, r in records for j, v in enumerate(split_accuracies(r, key))}
        shortened = self.shortened(cell)
        if not values:
            return {
                "status": "failed" if errors else "missing",
                "reason": errors[0] if errors else "no finished runs",
                "failed_runs": len(errors),
                "training": training,
                "shortened": shortened,
            }
        numbers = list(values.values())
        finished = [r for _, r in records if split_accuracies(r, key)]
        last, judged = np.sum([best_at_last_check(r, key) for r in finished], axis=0).astype(int).tolist()
        return {
            "status": "ok",
            "mean": float(np.mean(numbers)),
            "std": float(np.std(numbers)),
            "n": len(numbers),
            "runs": len(finished),
            "failed_runs": len(errors),
            **({"reason": errors[0]} if errors else {}),
            "training": training,
            "shortened": shortened,
            "values": values,
            "seconds": float(sum(r.get("seconds", 0.0) for r in finished)),
            "probe_last": (last, judged),
            "unconverged": 2 * last > judged > 0,
        }

    def shortened(self, cell: Cell) -> str:
        """Why the cell's runs are shorter than the setting the paper's number comes from ('' when they are not): a
        GCA row below its Table 5 epochs, a baseline that quick mode shortens — unless early stopping ended every one
        of its runs before quick mode's cap, so that each is the full schedule's run."""
        if not cell.runs:
            return ""
        run = cell.runs[0]
        if run.method != "gca":
            if not (self.mode.quick and run.method in SHORTENED_IN_QUICK):
                return ""
            # where early stopping ended every run before quick mode's cap, each trained epoch for epoch as the full
            # schedule would (the same seed, steps and stopping rule; only the cap differs): not shortened
            trainings = [(r or {}).get("training") or {} for r in map(self.store.get, cell.runs)]
            if all(t.get("stopping_epoch") for t in trainings):
                return ""
            return "quick mode's shortened schedule"
        planned = dict(run.settings).get("epochs", 0)
        full = build_config(cell.dataset).epochs
        return f"{planned} of Table 5's {full} epochs" if 0 < planned < full else ""

    def baseline_training_note(self, cells: list[Cell]) -> str:
        """How long each baseline trained, from its runs' records: the epochs run against the schedule's cap,
        whether early stopping ended them, and which weights give the embeddings ('' when no record has one)."""
        said = []
        for cell in cells:
            if not cell.runs or cell.runs[0].method == "gca":
                continue
            histories = [r["training"] for r in map(self.store.get, cell.runs) if r and r.get("training")]
            if not histories:
                continue
            ran = sorted(h["epochs_run"] for h in histories)
            epochs = f"{ran[0]:,}" if ran[0] == ran[-1] else f"{ran[0]:,}–{ran[-1]:,}"
            stopped = sum(h["stopping_epoch"] is not None for h in histories)
            ended = (
                "no early stopping"
                if not histories[0]["patience"]
                else "early stopping ended it"
                if stopped == len(histories) == 1
                else "early stopping ended each"
                if stopped == len(histories)
                else "early stopping had not ended it"
                if not stopped
                else f"early stopping ended {stopped} of {len(histories)} runs"
            )
            kept = "the last epoch's weights"
            if histories[0]["patience"]:
                kept = "the weights right after the update of its lowest loss's epoch" + (
                    f" ({histories[0]['kept_epoch']:,})" if len(histories) == 1 else ""
                )
            diffusion = histories[0].get("diffusion")
            if diffusion:  # MVGRL: how its diffusion view was kept
                kept += (
                    ", its diffusion dense and exact"
                    if diffusion["form"] == "dense"
                    else f", its diffusion sparse, keeping {diffusion['kept_mass']:.3f} of each row's mass on average "
                    f"({diffusion['entries_per_row']:,.0f} entries a row)"
                )
            said.append(
                f"{cell.label} on {cell.dataset}: {epochs} of at most {histories[0]['max_epochs']:,} epochs "
                f"({ended}), {kept}"
            )
        if not said:
            return ""
        return "Baselines trained (each run's record holds its loss at every epoch): " + "; ".join(said) + "."

    def notes(self, cells: list[Cell], datasets: list[str], twin: str) -> list[str]:
        """The notes under a table, made from what ran; ``twin`` is the trained row compared with Random-Init
        (:data:`~gca.reproduce.plan.TRAINED_TWIN`)."""
        notes = [f"Judged under {PROTOCOL_WORDS[self.mode.protocol]}."]
        judged = {len(split_accuracies(r)) for c in cells for r in map(self.store.get, c.runs)} - {0}
        said = self.mode.describe(judged.pop() if len(judged) == 1 else None)
        if len(judged) > 1:  # some datasets have fewer splits of their own than asked
            said += f" (a training was judged on {min(judged)} to {max(judged)} splits, as many as its dataset has)"
        notes.append(f"Runs: {said}. A number without ± is a single value.")
        notes += self.training_notes(cells, datasets)
        gains = self.gain_notes(cells, datasets, twin)
        notes += gains
        summaries = [self.summary(c) for c in cells]
        if any(map(_mini_batch, summaries)):
            notes.append(
                "(mini-batch): trained in mini-batches (the fast path: B anchors a step, neighbours sampled "
                "with the fan-out of each layer, negatives from the batch; see the training note above), not "
                "on the whole graph at every update as the paper's numbers were."
            )
        flagged = [
            f"{c.label} on {c.dataset} ({s['probe_last'][0]} of {s['probe_last'][1]} splits)"
            for c, s in zip(cells, summaries, strict=True)
            if s["status"] == "ok" and s["unconverged"]
        ]
        if flagged:
            notes.append(
                f"{UNCONVERGED}: the authors' probe (3,000 Adam steps) had not converged — its best "
                f"validation check was its last on most splits — so the number is the probe's as much as the "
                f"embeddings': {'; '.join(flagged)}."
            )
        if any(self.shortened(c) for c in cells):
            notes.append(
                "‡: trained on a shortened schedule (quick mode; gca.reproduce.baselines."
                "SHORTENED_IN_QUICK), so not compared with the paper's number (a baseline that early "
                "stopping ended before quick mode's cap trained as its full schedule would, and is "
                "compared)."
            )
        trained = self.baseline_training_note(cells)
        if trained:
            notes.append(trained)
        failed = self.failed_note(cells)
        if failed:
            notes.append(failed)
        if self.mode.quick and self.left_out:
            named = ", ".join(BASELINES[b][0] for b in self.left_out)
            name_them = spoken(f"name them with {option('baselines')} to run them")  # as this process names options
            notes.append(f"Quick mode left out these baselines ({name_them}): {named}.")
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

    def failed_note(self, cells: list[Cell]) -> str:
        """Every run of the table that failed (training collapsed or diverged), with its file and reason; '' when
        none did; a run two rows share is named once, with its first row. A failed run's record is kept: the same
        command reads it again, deleting it trains the run again."""
        said = {}
        for cell in cells:
            for run in cell.runs:
                record = self.store.get(run) if isinstance(self.datasets.get(run.dataset), LoadedDataset) else None
                if record and record.get("error") and run not in said:
                    said[run] = failed_run(cell.label, run, record, self.store)
        if not said:
            return ""
        return (
            f'Failed runs (a cell without a finished training reads "failed"; each record is kept and read again '
            f"by the same command — delete its file to train that run again): {'; '.join(said.values())}."
        )

    def training_notes(self, cells: list[Cell], datasets: list[str]) -> list[str]:
        """Per dataset: how its trained GCA rows trained (epochs, updates, exact or mini-batch with B and fan-out,
        device), read from their records, and the seconds its runs took."""
        lines = []
        for ds in datasets:
            mine = [c for c in cells if c.dataset == ds]
            # a run two rows share (Random-Init judged by two probes, Table 4's GCA row and GCA-DE) ran once:
            # its seconds are counted once
            runs = {r: None for c in mine for r in c.runs}
            records = [self.store.get(r) for r in runs if r.method == "gca" and dict(r.settings).get("epochs")]
            # a failed training (accuracy null) made no updates to report and has no time of its own: counted apart
            trained = [r for r in records if r and r.get("config") and r.get("accuracy") is not None]
            failed = sum(1 for r in records if r and r.get("accuracy") is None)
            if not trained and not failed:
                continue
            how = sorted(
                {
                    _how_trained(r, dict(c.runs[0].settings).get("epochs"))
                    for c in mine
                    if c.runs and c.runs[0].method == "gca" and dict(c.runs[0].settings).get("epochs")
                    for r in map(self.store.get, c.runs)
                    if r and r.get("config") and r.get("accuracy") is not None
                }
            )
            gca_seconds = sum(float(r.get("seconds", 0.0)) for r in trained)
            all_seconds = sum(float(r.get("seconds", 0.0)) for r in map(self.store.get, runs) if r)
            done = f"GCA trained {'; '.join(how)}. " if how else ""
            lost = f"; {failed} failed (see Failed runs)" if failed else ""
            lines.append(
                f"{ds}: {done}Runs took {all_seconds:,.0f} s ({plural(len(trained), 'GCA training')}: "
                f"{gca_seconds:,.0f} s{lost})."
            )
        return lines

    def gain_notes(self, cells: list[Cell], datasets: list[str], twin: str) -> list[str]:
        """What training adds: per dataset, the trained row ``twin`` minus Random-Init (the same encoder and seed,
        untrained, on the same splits), as mean ± std of the paired differences, under a protocol whose probe
        converged on both rows. Where the authors' probe did not (its best check its last), the difference is given
        under gca's probe on the same runs (:data:`~gca.reproduce.plan.SECOND_OPINION`), and the authors' is said to
        measure the probe."""
        said, caveats = [], []
        for ds in datasets:
            trained = next((c for c in cells if c.dataset == ds and c.label == twin), None)
            untrained = next((c for c in cells if c.dataset == ds and c.info.get("untrained")), None)
            if trained is None or untrained is None:
                continue
            a, b = self.summary(trained), self.summary(untrained)
            if a["status"] != "ok" or b["status"] != "ok":
                continue
            protocol = self.mode.protocol
            if a["unconverged"] or b["unconverged"]:
                which = "Random-Init" if b["unconverged"] else twin
                last, judged = (b if b["unconverged"] else a)["probe_last"]
                caveats.append(
                    f"{ds}: {_paired(a, b)} under the authors' protocol measures their probe, not the "
                    f"training: on {which} its best check was its last on {last} of {judged} splits"
                )
                a, b = (
                    self.summary(Cell(c.label, c.dataset, c.runs, {**c.info, "judge": SECOND_OPINION}))
                    for c in (trained, untrained)
                )
                protocol = "sklearn"
                if a["status"] != "ok" or b["status"] != "ok":
                    continue
            gain = _paired(a, b)
            if gain:
                said.append(f"{ds} {gain} under the {protocol} protocol")
        notes = []
        if said:
            notes.append(
                f"What training adds ({twin} − Random-Init, the same encoder and seed untrained, judged on "
                f"the same splits by a probe that converged on both; mean ± std of the paired differences, "
                f"in points): {'; '.join(said)}."
            )
        if caveats:
            notes.append(
                f"Not what training adds: {'; '.join(caveats)} — Random-Init (sklearn probe) is the same runs "
                "judged by gca's probe, whose solver runs to convergence."
            )
        return notes

    def _by_label(self, cells: list[Cell]) -> dict[str, dict[str, dict[str, Any]]]:
        table: dict[str, dict[str, dict[str, Any]]] = {}
        for cell in cells:
            table.setdefault(cell.label, {})[cell.dataset] = self.summary(cell)
        return table

    def _title(self, what: str) -> str:
        return f"{what} ({self.mode.protocol} protocol)"

    def table3(self, cells: list[Cell], datasets: list[str]) -> list[Path]:
        data_used = {cell.label: cell.info["data"] for cell in cells}
        rows = [(label, [data_used[label]], by_ds) for label, by_ds in self._by_label(cells).items()]
        notes = self.notes(cells, datasets, TRAINED_TWIN["table3"])
        if any(c.runs and c.runs[0].method in ("gcn", "gat") for c in cells):
            notes.append("GCN and GAT are supervised (trained end to end on the split's training labels).")
        if any(c.info.get("tuned") for c in cells):
            notes.append(
                "GCA (tuned; not the paper's): the setting gca tune --space wide found on each dataset's validation "
                "labels (gca train --config tuned; docs/tuning.md); the GCA-DE/-PR/-EV rows keep Table 5's."
            )
        write_table(
            self.out / "table3",
            self._title("Table 3 — node classification accuracy (%)"),
            rows,
            ["Method", "Training data"],
            datasets,
            PAPER_TABLE3,
            notes,
            self.mode.comparable,
        )
        return [self.out / "table3.md", self.out / "table3.csv"]

    def table4(self, cells: list[Cell], datasets: list[str]) -> list[Path]:
        info = {cell.label: cell.info for cell in cells}
        rows = [
            (label, [info[label]["topology"], info[label]["attribute"]], by_ds)
            for label, by_ds in self._by_label(cells).items()
        ]
        notes = [
            *self.notes(cells, datasets, TRAINED_TWIN["table4"]),
            "Degree centrality in every variant; GCA–T–A is GRACE (uniform removal and masking).",
        ]
        write_table(
            self.out / "table4",
            self._title("Table 4 — ablation: accuracy (%)"),
            rows,
            ["Variant", "Topology", "Attribute"],
            datasets,
            PAPER_TABLE4,
            notes,
            self.mode.comparable,
        )
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
            lines = ["p_e,p_f,mean,std,runs,failed_runs,status"]
            for cell in mine:
                s = self.summary(cell)
                i, j = grid.index(cell.info["p_e"]), grid.index(cell.info["p_f"])
                if s["status"] == "ok":
                    values[i, j] = s["mean"]
                    std = f"{s['std']:.4f}" if s["n"] > 1 else ""  # one value has no spread to give
                    lines.append(
                        f"{cell.info['p_e']},{cell.info['p_f']},{s['mean']:.4f},{std},{s['runs']},{s['failed_runs']},ok"
                    )
                else:
                    lines.append(f"{cell.info['p_e']},{cell.info['p_f']},,,0,{s.get('failed_runs', 0)},{s['status']}")
            stem = self.out / f"figure4-{canonical_name(ds)}"
            atomic_write_text(stem.with_suffix(".csv"), "\n".join(lines) + "\n")
            epochs = dict(mine[0].runs[0].settings)["epochs"] if mine and mine[0].runs else "?"
            short = self.shortened(mine[0]) if mine else ""
            title = (
                f"GCA-DE on {ds}: accuracy (%) vs augmentation strength\n"
                f"({plural(self.mode.grid_runs, 'training')} per cell, "
                f"{short or f'{epochs} epochs'}; {self.mode.protocol} protocol)"
            )
            sensitivity_heatmap(values, grid, grid, stem.with_suffix(".png"), title)
            written += [stem.with_suffix(".csv"), stem.with_suffix(".png")]
        return written


def _training(cell: Cell, records: list[dict[str, Any]]) -> str:
    """The training that made a cell's runs, read from their records: ``exact``, or ``mini-batch B=…, fan-out …``
    with the fan-out of every layer (``10,10``); ``untrained``; ``""`` for a baseline."""
    if not cell.runs or cell.runs[0].method != "gca":
        return ""
    if not dict(cell.runs[0].settings).get("epochs"):
        return "untrained"
    config = next((r["config"] for r in records if isinstance(r.get("config"), dict)), None)
    if config is None:  # not run yet: what the plan chose
        return dict(cell.runs[0].settings).get("training", "exact")
    if not config.get("batch_size"):
        return "exact"
    return f"mini-batch B={config['batch_size']}, fan-out {','.join(map(str, _fanout(config)))}"


def _fanout(config: dict[str, Any]) -> list[int]:
    """The fan-out of every layer (one value given applies to each)."""
    fanout = list(config["fanout"])
    return fanout * int(config["layers"]) if len(fanout) == 1 else fanout


def _how_trained(record: dict[str, Any], planned: int | None = None) -> str:
    """What a GCA run record says it trained: exact or mini-batch (B, fan-out per layer), epochs, updates, device;
    for mini-batches the ``planned`` full-graph epochs whose updates they keep."""
    config = record["config"]
    epochs = int(config["epochs"])
    updates = int(record.get("updates") or epochs)
    device = record.get("device", "?")
    if config.get("batch_size"):
        fanout = _fanout(config)
        kept = f" (the setting's {plural(planned, 'epoch')} of the whole graph)" if planned else ""
        return (
            f"in mini-batches of B = {config['batch_size']:,} anchors, fan-out {','.join(map(str, fanout))}: "
            f"{plural(epochs, 'epoch')} of {updates // max(epochs, 1):,} = {plural(updates, 'update')}{kept} on "
            f"{device}"
        )
    return (
        f"exactly (the whole graph at every update): {plural(epochs, 'epoch')} = {plural(updates, 'update')} on "
        f"{device}"
    )
