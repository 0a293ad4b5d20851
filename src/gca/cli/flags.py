"""The command line's name of each Python parameter an error or warning names (:func:`gca.errors.option`): ``--``
and the name with ``_`` → ``-``, except those in :data:`FLAGS`."""

from __future__ import annotations

from dataclasses import fields

from ..config import GCAConfig

#: The flags that differ from ``--`` + the parameter's name (:func:`gca.errors.render` reads them).
FLAGS: dict[str, str] = {
    # a GCAConfig key is set with --set, except those with a flag of their own
    **{f.name: f"--set {f.name}=" for f in fields(GCAConfig) if f.name not in ("epochs", "seed", "centrality")},
    # gca.config
    "config_file": "--config",
    "parse_overrides.items": "--set",
    # gca.evaluate.splits.SplitSetting
    "SplitSetting.scheme": "--eval-split",
    "SplitSetting.count": "--splits",
    "SplitSetting.train": "--train-frac",
    "SplitSetting.val": "--val-frac",
    "SplitSetting.test": "--test-frac",
    # gca.evaluate.linkpred.hold_out_edges
    "hold_out_edges.val": "--link-val",
    "hold_out_edges.test": "--link-test",
    # gca.run.train.TrainRequest, gca.run.job.Job
    "evaluate": "--eval",
    "training='fast'": "--fast",
    "training='exact'": "--exact",
}
