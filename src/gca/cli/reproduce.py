"""``gca reproduce``: the paper's tables and figures, resumable."""

from __future__ import annotations

import argparse
import time

from ..config import ConfigError
from ..stderr import say
from .common import protocol_argument, split_arguments, split_setting
from .guard import imports_held


def add_parser(sub) -> None:
    rep = sub.add_parser(
        "reproduce",
        help="reproduce the paper's Table 3, Table 4, Figure 3 and Figure 4 (resumable)",
        description="Reproduce Zhu et al. (WWW 2021). Finished runs are kept in OUT/runs and never repeated: an "
        "interrupted reproduction continues when the same command is run again.",
    )
    rep.add_argument("task", choices=("table3", "table4", "figure4", "figure3", "all"))
    rep.add_argument(
        "--dataset",
        action="append",
        help="dataset to run (repeatable). Default: the paper's five for the tables, Amazon-Photo for figure4",
    )
    rep.add_argument("--data-dir", help="folder holding the datasets (default: $GCA_DATA_DIR or ~/.cache/gca/data)")
    rep.add_argument("--out", required=True, help="output folder (tables, figures, runs/)")
    rep.add_argument(
        "--quick",
        action="store_true",
        help="sized for a laptop CPU: every GCA row keeps its setting's number of "
        "updates (mini-batches where --fast would choose them), one training per cell judged on 20 splits, raw "
        "features, GMI and MVGRL (on shortened schedules, marked ‡) as the baselines unless --baselines names others, "
        "a 5×5 Figure 4 grid of shortened runs",
    )
    rep.add_argument("--runs", type=int, help="trainings per table cell (default 20, or 1 with --quick)")
    rep.add_argument(
        "--fast",
        action="store_true",
        help="train GCA's runs as gca train --fast does: exact or mini-batch, chosen "
        "from each graph's size and the device; the tables say which training made each row",
    )
    rep.add_argument(
        "--baselines",
        help="comma-separated baselines for Table 3 (default: all of raw, node2vec, deepwalk, "
        "deepwalk+features, gae, vgae, dgi, gmi, mvgrl, gcn, gat; with --quick: raw, gmi, mvgrl; 'none' for none)",
    )
    rep.add_argument("--no-plots", action="store_true", help="skip the loss-curve and t-SNE plots of GCA runs")
    protocol_argument(rep, default="authors")
    split_arguments(rep)
    rep.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    with imports_held():
        from ..datasets import check_dataset_name
        from ..io import hold_folder, release_folder
        from ..outputs.folder import check_folder
        from ..reproduce import PAPER_DATASETS
        from ..reproduce.baselines import BASELINES

    if args.runs is not None and args.runs < 1:
        raise ConfigError(f"--runs must be at least 1, got {args.runs}")
    split_setting(args)
    baselines = None
    if args.baselines is not None:
        baselines = [b.strip() for b in args.baselines.split(",") if b.strip() and b.strip() != "none"]
        unknown = [b for b in baselines if b not in BASELINES]
        if unknown:
            raise ConfigError(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)} or none")
    if any(not name.strip() for name in args.dataset or ()):
        raise ConfigError("--dataset is empty; give a dataset name or the path of a graph file or folder")
    # Without --dataset: the paper's five datasets for the tables and, as in the paper, Amazon-Photo for Figure 4.
    datasets = args.dataset or list(PAPER_DATASETS)
    figure4_datasets = args.dataset or ["Amazon-Photo"]
    for name in datasets:  # an unknown name is one line naming the closest, before the output folder is made
        check_dataset_name(name)
    out = check_folder(args.out, "out")
    lock = hold_folder(out)  # one reproduction per folder: a second would train the same runs again beside it
    try:
        return _reproduce_into(out, args, datasets, figure4_datasets, baselines)
    finally:
        release_folder(lock)


def _reproduce_into(out, args: argparse.Namespace, datasets, figure4_datasets, baselines) -> int:
    from ..reproduce import Reproduction

    repro = Reproduction(
        out,
        datasets,
        args.data_dir,
        quick=args.quick,
        runs=args.runs,
        device=args.device,
        plots=not args.no_plots,
        progress=not args.quiet,
        baselines=baselines,
        figure4_datasets=figure4_datasets,
        protocol=args.eval_protocol,
        split=split_setting(args),
        fast=args.fast,
    )
    start = time.perf_counter()
    try:
        written = repro.run(args.task)
    except KeyboardInterrupt:
        say(
            f"gca: interrupted after {repro.trained} new runs; finished runs are saved in {out / 'runs'} — "
            "run the same command again to continue"
        )
        return 130
    print(
        f"{repro.trained} runs trained, {repro.reused} reused from {out / 'runs'}; {time.perf_counter() - start:.0f} s"
    )
    for path in written:
        print(f"wrote {path}")
    if repro.ran_nothing:  # a table of "skipped" is not a result: scripts must see it
        reasons = "; ".join(f"{ds}: {why}" for ds, why in repro.skipped.items())
        say(f"gca: error: no dataset could run ({reasons})")
        return 1
    return 0
