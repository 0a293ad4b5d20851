"""``gca tune``: hyperparameter search on validation accuracy with Optuna, resumable, ending in a config file.

* **Objective** — the mean validation accuracy (the usual linear evaluation, C chosen per split on the validation
  nodes; or the authors' protocol's best check) over the first ``splits`` of the random splits ``gca train`` draws
  with the same seed. Every label outside those splits' training and validation nodes is −1 before the search
  starts: no test label of its splits can be read.
* **Trials** — TPE proposes a setting; GCA trains with it as ``gca train`` would on the device (mini-batches where
  its default chooses them) for up to ``max_epochs`` epochs, checked every ``eval_every``; the trial's value is the
  best check and its ``epochs`` that check's epoch (early stopping). Every trial trains with the same seed, so
  ``gca train --config DIR/best.toml`` re-runs the best exactly.
* **Pruning** — the median rule after five trials and two checks; a collapsing trial is pruned at once with its
  reason (``stopped``).
* **Storage** — an SQLite study in the output folder (with a heartbeat): after Ctrl-C or kill -9 the same command
  continues, finished trials are never repeated, and several processes on one folder share the search.

The default space spans Table 5's values; ``--space FILE`` (TOML) replaces any key's range or adds one
(``[tau] low = 0.2, high = 0.8``, ``[activation] choices = [...]``, ``[p_tau] value = 0.7``, ``log = true``), and
``--space wide`` is the tuned settings' space (:data:`NAMED_SPACES`). :func:`mean_rank_choice` picks a setting for
a graph no search saw, from the others' validation ranks.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import GCAConfig
from .errors import UserError, option, quoted
from .io import atomic_write, hold_folder, read_document, release_folder
from .progress import to_stderr

#: Table 5 of Zhu et al. (WWW 2021) spans these values over its five datasets; p_τ is 0.7 throughout.
DEFAULT_SPACE: dict[str, dict[str, Any]] = {
    "p_e1": {"low": 0.2, "high": 0.5},
    "p_e2": {"low": 0.1, "high": 0.5},
    "p_f1": {"low": 0.1, "high": 0.3},
    "p_f2": {"low": 0.1, "high": 0.4},
    "p_tau": {"value": 0.7},
    "tau": {"low": 0.1, "high": 0.6},
    "lr": {"low": 5e-4, "high": 0.1, "log": True},
    "hidden": {"choices": [128, 256]},
    "activation": {"choices": ["relu", "prelu", "rrelu"]},
}
STUDY_NAME = "gca"
#: Optuna's median pruner: no pruning during the first trials and the first checks of every trial.
PRUNER_STARTUP_TRIALS, PRUNER_WARMUP_CHECKS = 5, 2


class TuneError(UserError, ValueError):
    """The search cannot run as asked; the message is one line meant for the user."""


#: Search spaces shipped with gca, by the name ``--space`` takes (``gca/configs/spaces/<name>.toml``; a file of that
#: name wins).
NAMED_SPACES = ("wide",)


def read_space(path: str | Path | None) -> dict[str, dict[str, Any]]:
    """The default space with the keys of ``path`` (TOML) replacing theirs; every range checked.

    Parameters
    ----------
    path
        A TOML file of ranges by config key, or a shipped space's name (:data:`NAMED_SPACES`); ``None`` for the
        default space.
    """
    space = {key: dict(spec) for key, spec in DEFAULT_SPACE.items()}
    if path is not None:
        if str(path) in NAMED_SPACES and not Path(path).exists():
            from importlib import resources

            path = Path(str(resources.files("gca") / "configs" / "spaces" / f"{path}.toml"))
        given = read_document(path, "search space", TuneError, allow_json=False)
        for key, spec in given.items():
            if not isinstance(spec, dict):
                raise TuneError(f"{path}: [{key}] must be a table with low/high[/log], choices or value")
            space[key] = spec
    for key, spec in space.items():
        _check_spec(key, spec)
    return space


def _check_spec(key: str, spec: dict[str, Any]) -> None:
    if key in ("epochs", "seed"):
        raise TuneError(
            f"{key} is not searched: epochs come from validation checks ({option('max_epochs')}) and every "
            "trial uses the seed"
        )
    kinds = [k for k in ("low", "choices", "value") if k in spec]
    unknown = set(spec) - {"low", "high", "log", "choices", "value"}
    if len(kinds) != 1 or unknown or ("low" in spec) != ("high" in spec):
        raise TuneError(f"search space [{key}] needs exactly one of low + high (optionally log), choices, or value")
    probes = spec["choices"] if "choices" in spec else [spec.get("value", spec.get("low")), spec.get("high")]
    if "choices" in spec and (not isinstance(spec["choices"], list) or not spec["choices"]):
        raise TuneError(f"search space [{key}]: choices must be a non-empty list")
    for value in probes:
        if value is None:
            continue
        try:
            GCAConfig().replace(**{key: value})
        except UserError as exc:
            raise TuneError(f"search space [{key}]: {quoted(exc)}") from None
    if "low" in spec:
        low, high = spec["low"], spec["high"]
        integral = isinstance(getattr(GCAConfig(), key, None), int)
        for bound in (low, high):
            wrong_kind = integral and not isinstance(bound, int)
            if isinstance(bound, bool) or not isinstance(bound, int | float) or wrong_kind:
                raise TuneError(
                    f"search space [{key}]: low and high must be {'integers' if integral else 'numbers'}, got {bound!r}"
                )
        if not low < high:
            raise TuneError(f"search space [{key}]: low must be below high, got {low} and {high}")
        if spec.get("log") and low <= 0:
            raise TuneError(f"search space [{key}]: a log range needs low > 0, got {low}")
        for value in _inner_values(low, high, integral, bool(spec.get("log"))):  # the whole range, not its ends
            try:
                GCAConfig().replace(**{key: value})
            except UserError as exc:
                raise TuneError(
                    f"search space [{key}]: the range holds {value}, which the config refuses ({exc})"
                ) from None


def _inner_values(low: float, high: float, integral: bool, log: bool, samples: int = 257) -> list[float]:
    """Values inside [low, high] that a search may draw, to check against the config: every integer of an integer
    range (up to 4,096 of them, else the first and last 2,048), or ``samples`` points spread over a float range
    (geometrically for a log range)."""
    if integral:
        if high - low < 4096:
            return list(range(int(low), int(high) + 1))
        return [*range(int(low), int(low) + 2048), *range(int(high) - 2047, int(high) + 1)]
    if log:
        return [low * (high / low) ** (i / (samples - 1)) for i in range(samples)]
    return [low + (high - low) * i / (samples - 1) for i in range(samples)]


def suggest(trial: Any, space: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One setting drawn by ``trial`` from ``space``.

    Parameters
    ----------
    trial
        An Optuna trial.
    space
        The search space (:func:`read_space`).
    """
    params: dict[str, Any] = {}
    for key, spec in space.items():
        if "value" in spec:
            params[key] = spec["value"]
        elif "choices" in spec:
            params[key] = trial.suggest_categorical(key, spec["choices"])
        elif isinstance(spec["low"], int) and isinstance(spec["high"], int) and not isinstance(spec["low"], bool):
            params[key] = trial.suggest_int(key, spec["low"], spec["high"], log=bool(spec.get("log")))
        else:
            params[key] = trial.suggest_float(key, float(spec["low"]), float(spec["high"]), log=bool(spec.get("log")))
    return params


@dataclass
class SearchSettings:
    """What defines one search; a study folder belongs to one such search.

    Parameters
    ----------
    dataset
        The dataset searched on.
    max_epochs
        The epochs of a trial that is not stopped early.
    eval_every
        Validation accuracy is measured every this many epochs (where unpromising trials stop).
    splits
        The evaluation splits validation accuracy averages over.
    base
        The configuration every trial starts from.
    space
        The searched ranges by config key.
    protocol
        How validation accuracy is measured: ``"sklearn"`` or ``"authors"``.
    """

    dataset: str
    max_epochs: int
    eval_every: int
    splits: int
    base: dict[str, Any]
    space: dict[str, dict[str, Any]] = field(default_factory=dict)
    protocol: str = "sklearn"  # how validation accuracy is measured (gca.evaluate.classification.PROTOCOLS)

    def key(self) -> dict[str, Any]:
        key = {
            "dataset": self.dataset,
            "max_epochs": self.max_epochs,
            "eval_every": self.eval_every,
            "splits": self.splits,
            "base": self.base,
            "space": self.space,
        }
        if self.protocol != "sklearn":  # the default protocol is not in the key: a study's key stays as without it
            key["protocol"] = self.protocol
        return key


def search_labels(labels: Any, splits: list) -> Any:
    """``labels`` with every node outside the splits' training and validation parts set to −1.

    Parameters
    ----------
    labels
        One label per node.
    splits
        The evaluation splits.
    """
    import numpy as np
    import torch

    visible = np.zeros(labels.shape[0], dtype=bool)
    for train, val, _ in splits:
        visible[train] = True
        visible[val] = True
    masked = labels.clone()
    masked[torch.from_numpy(~visible)] = -1
    return masked


SQLITE_HEADER = b"SQLite format 3\x00"


def check_study_file(path: Path) -> None:
    """Refuse a ``study.db`` that is not an Optuna study: not SQLite at all (random bytes, a text file), or
    another program's SQLite database, which Optuna would otherwise fill with its own tables.

    Parameters
    ----------
    path
        The study's ``study.db``.
    """
    if not path.exists():
        return
    if not path.is_file():
        raise TuneError(f"{path} is not a regular file; give {option('out')} a folder of its own")
    try:
        with open(path, "rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise TuneError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not header:
        return  # an empty file is an empty database
    if header != SQLITE_HEADER:
        raise TuneError(f"{path} is not a study database (not SQLite); move it away or give another {option('out')}")
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, timeout=60)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise TuneError(
            f"{path} is not a readable study database ({exc}); move it away or give another {option('out')}"
        ) from None
    if tables and not {"studies", "trials", "version_info"} <= tables:
        raise TuneError(
            f"{path} is another program's SQLite database, not a gca study; move it away or give another "
            f"{option('out')}"
        )


def _silent(message: str) -> None:
    pass


class Search:
    """One resumable search over a prepared graph (module docstring). ``run`` adds trials; ``best`` reports."""

    def __init__(
        self,
        out: Path,
        settings: SearchSettings,
        graph: Any,
        labels: Any,
        splits: list,
        device: str = "auto",
        seed: int = 0,
        log: Callable[[str], None] | None = to_stderr,
    ) -> None:
        """Open (or continue) the study in ``out``.

        Parameters
        ----------
        out
            The study folder.
        settings
            What defines the search (a folder of another search is refused).
        graph
            The cleaned graph (:class:`~gca.graph.graph.Graph`) every trial trains on.
        labels
            One label per node; a trial sees only those of the splits' training and validation nodes
            (:func:`search_labels`).
        splits
            The evaluation splits.
        device
            Where trials train.
        seed
            Seeds Optuna's TPE sampler.
        log
            Where each trial's line goes; ``None`` for nowhere.
        """
        import optuna

        self.out, self.settings, self.graph, self.device = out, settings, graph, device
        self.log = log or _silent  # a line per trial; None: none
        self.seed = seed
        self.splits = splits
        self.labels = search_labels(labels, splits)  # the only labels a trial sees
        self.optuna = optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        # a trial whose process died (no heartbeat for 30 s) is marked failed and run again; Optuna 4.9 renamed
        # the callback and its argument, and older versions have only the old names
        if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
            retry = {"heartbeat_stale_trial_callback": optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=2)}
        else:  # pragma: no cover - Optuna < 4.9
            retry = {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(max_retry=2)}
        database = out / "study.db"
        # processes started together on a fresh folder create the schema one after another (Optuna's creation
        # is not safe against a concurrent one), then share the study
        lock = hold_folder(out, ".gca-study-lock", wait=True)
        try:
            check_study_file(database)
            storage = optuna.storages.RDBStorage(
                f"sqlite:///{database.resolve()}",
                heartbeat_interval=10,
                grace_period=30,
                engine_kwargs={"connect_args": {"timeout": 60}},
                **retry,
            )
            self.study = optuna.create_study(
                study_name=STUDY_NAME,
                storage=storage,
                direction="maximize",
                load_if_exists=True,
                sampler=optuna.samplers.TPESampler(seed=seed),
                pruner=optuna.pruners.MedianPruner(
                    n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=PRUNER_WARMUP_CHECKS * settings.eval_every
                ),
            )
        finally:
            release_folder(lock)
        recorded = self.study.user_attrs.get("search")
        if recorded is None:
            self.study.set_user_attr("search", settings.key())
        elif recorded != _plain(settings.key()):
            changed = sorted(k for k in recorded if recorded[k] != _plain(settings.key()).get(k))
            raise TuneError(
                f"{out} holds a search with other settings ({', '.join(changed)} differ); give another "
                f"{option('out')} or the same settings"
            )

    def finished(self) -> int:
        states = (self.optuna.trial.TrialState.COMPLETE, self.optuna.trial.TrialState.PRUNED)
        return len(self.study.get_trials(deepcopy=False, states=states))

    def run(self, trials: int, timeout: float | None = None) -> None:
        """Trials until ``trials`` have finished in this study (all processes together), or ``timeout`` s.

        Parameters
        ----------
        trials
            The finished trials to reach.
        timeout
            Stop after this many seconds; ``None`` for no limit.
        """
        if self.finished() >= trials:
            return
        states = (self.optuna.trial.TrialState.COMPLETE, self.optuna.trial.TrialState.PRUNED)
        done = self.optuna.study.MaxTrialsCallback(trials, states=states)
        self.study.optimize(self.objective, timeout=timeout, callbacks=[done, self._report], catch=())

    def _report(self, study: Any, trial: Any) -> None:
        value = "pruned" if trial.value is None else f"{trial.value:.2f} %"
        if trial.state == self.optuna.trial.TrialState.PRUNED:
            stopped = trial.user_attrs.get("stopped")  # e.g. collapse, found before any check
            value = f"pruned: {stopped}" if stopped else f"pruned at epoch {trial.last_step}"
        best = f"; best {study.best_value:.2f} % (trial {study.best_trial.number})" if _has_complete(study) else ""
        self.log(f"trial {trial.number}: {value}{best}")

    def config(self, params: dict[str, Any], epochs: int | None = None) -> GCAConfig:
        return GCAConfig(**self.settings.base).replace(**params, epochs=epochs or self.settings.max_epochs)

    def objective(self, trial: Any) -> float:
        from .evaluate.classification import validation_accuracy
        from .run.pipeline import run_gca
        from .train.estimator import GCA
        from .train.loop import CollapseError

        config = self.config(suggest(trial, self.settings.space))
        every, last = self.settings.eval_every, config.epochs
        best = [-1.0, 0]

        def check(epoch: int, embed) -> None:
            if epoch % every and epoch != last:
                return
            accuracy = validation_accuracy(embed(), self.labels, self.splits, protocol=self.settings.protocol)
            trial.report(accuracy, epoch)
            if accuracy > best[0]:
                best[:] = [accuracy, epoch]
            if trial.should_prune():
                trial.set_user_attr("epochs", best[1])
                raise self.optuna.TrialPruned()

        estimator = GCA(config, device=self.device)
        start = time.perf_counter()
        try:
            run_gca(estimator, estimator.prepare(self.graph), dataset=self.settings.dataset, on_epoch=check)
        except CollapseError as exc:  # nothing to gain from the remaining epochs: pruned at once, reason kept
            trial.set_user_attr("epochs", best[1])
            trial.set_user_attr("stopped", str(exc))
            raise self.optuna.TrialPruned(str(exc)) from None
        trial.set_user_attr("epochs", best[1])
        trial.set_user_attr("seconds", time.perf_counter() - start)
        return best[0]

    def best(self) -> tuple[dict[str, Any], float, int, int]:
        """(config keys of the best setting, its validation accuracy, its epochs, its trial number)."""
        if not _has_complete(self.study):
            raise TuneError(f"no trial has finished yet; run more trials ({option('trials')})")
        trial = self.study.best_trial
        params = {key: spec["value"] for key, spec in self.settings.space.items() if "value" in spec}
        params.update(trial.params)
        return params, float(trial.value), int(trial.user_attrs["epochs"]), trial.number

    def write_trials(self, plots: bool = True) -> list[Path]:
        """``trials.csv`` and, with ``plots``, ``trials.png`` and ``importance.png`` in the study folder.

        Parameters
        ----------
        plots
            Also draw the plots.
        """
        atomic_write(self.out / "trials.csv", lambda f: f.write(self.trials_csv()))
        return [self.out / "trials.csv"] + (
            plot_search(self, self.out / "trials.png", self.out / "importance.png") if plots else []
        )

    def conclude(self, labels: Any, splits: list, seconds: float) -> tuple[dict[str, Any], Any, list[Path]]:
        """End the search: ``best.toml`` holds the best setting, and that setting is trained once more and judged
        on the test nodes of every one of ``splits`` — which the search never saw (``labels`` are all of them).
        ``final.json`` records it; returns (that record, the test evaluation, the files written).

        Parameters
        ----------
        labels
            Every node's label (test nodes included).
        splits
            The evaluation splits.
        seconds
            The search's time, for the record.
        """
        from .io import json_bytes
        from .run.pipeline import run_gca
        from .train.estimator import GCA

        params, val_acc, epochs, number = self.best()
        best = self.config(params, epochs)
        searched = [key for key, spec in self.settings.space.items() if "value" not in spec]
        note = (
            f"gca tune on {self.settings.dataset}: trial {number} of {self.finished()}, validation accuracy "
            f"{val_acc:.2f} % (mean over {self.settings.splits} splits, seed {self.seed}).\nReproduce: gca train "
            f"--config {self.out / 'best.toml'} --splits {self.settings.splits}: its results.json val_mean is this "
            "number."
        )
        atomic_write(self.out / "best.toml", lambda f: f.write(best_toml(best, searched, note)))
        estimator = GCA(best, device=self.device)
        final = run_gca(
            estimator,
            estimator.prepare(self.graph),
            dataset=self.settings.dataset,
            labels=labels,
            splits=splits,
            protocol=self.settings.protocol,
        )
        record = {
            "best_trial": number,
            "validation_accuracy": val_acc,
            "search_splits": self.settings.splits,
            "config": best.to_dict(),
            "test": final.record["accuracy"],
            "trials_finished": self.finished(),
            "seconds_this_run": round(seconds, 1),
        }
        atomic_write(self.out / "final.json", lambda f: f.write(json_bytes(record)))
        return record, final.evaluation, [self.out / "best.toml", self.out / "final.json"]

    def trials_csv(self) -> bytes:
        keys = sorted({k for t in self.study.trials for k in t.params})
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["trial", "state", "validation_accuracy", "epochs", "last_checked_epoch", "seconds", *keys])
        for t in self.study.trials:
            seconds = t.user_attrs.get("seconds")
            if seconds is None and t.datetime_complete and t.datetime_start:
                seconds = (t.datetime_complete - t.datetime_start).total_seconds()
            last_value = None if not t.intermediate_values else max(t.intermediate_values.values())
            value = t.value if t.value is not None else last_value
            writer.writerow(
                [
                    t.number,
                    t.state.name.lower(),
                    "" if value is None else f"{value:.4f}",
                    t.user_attrs.get("epochs", ""),
                    "" if t.last_step is None else t.last_step,
                    "" if seconds is None else f"{seconds:.1f}",
                    *[t.params.get(k, "") for k in keys],
                ]
            )
        return buffer.getvalue().encode()

    def importances(self) -> dict[str, float]:
        """Each searched parameter's importance (Optuna's fANOVA); empty when too few trials finished."""
        try:
            return dict(self.optuna.importance.get_param_importances(self.study))
        except (RuntimeError, ValueError):
            return {}


def best_toml(config: GCAConfig, searched: list[str], note: str) -> bytes:
    """A config file ``gca train --config`` reads as it is: every key of ``config`` — the searched ones first —
    so it trains the same model whatever dataset defaults apply.

    Parameters
    ----------
    config
        The best setting's configuration.
    searched
        The searched keys (written first).
    note
        A comment line for the file's head.
    """
    values = config.to_dict()
    lines = [f"# {line}" for line in note.splitlines()]
    lines += ["", "# searched"] + [f"{key} = {_toml_value(values[key])}" for key in sorted(searched)]
    lines += ["", "# fixed during the search (epochs: where validation accuracy peaked)"]
    lines += [f"{key} = {_toml_value(value)}" for key, value in values.items() if key not in searched]
    return ("\n".join(lines) + "\n").encode()


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _has_complete(study: Any) -> bool:
    import optuna

    return bool(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


def _plain(value: Any) -> Any:
    """``value`` as JSON would return it (tuples as lists), to compare with what the study stored."""
    import json

    return json.loads(json.dumps(value))


def mean_rank_choice(
    validation: Mapping[str, Mapping[str, float]], graphs: Sequence[str], candidates: Sequence[str] | None = None
) -> str:
    """The candidate setting whose validation accuracy ranks best on average over ``graphs``: the rule that picks a
    setting for a graph no search has seen (docs/tuning.md, "A default for users' graphs").

    On each graph the candidates are ranked by validation accuracy (1 the best; equal accuracies share their mean
    rank); the lowest mean rank wins, a tie going to the higher mean accuracy, then to the candidate listed first.
    Only validation accuracies are read.

    Parameters
    ----------
    validation
        Candidate → graph → validation accuracy (%); every candidate needs one on each of ``graphs``.
    graphs
        The graphs judged on (leaving one out: all the others).
    candidates
        The candidates to choose from, in order (default: all of ``validation``'s).
    """
    names = list(candidates if candidates is not None else validation)
    if not names or not graphs:
        raise TuneError("mean_rank_choice needs at least one candidate and one graph")
    missing = [(c, g) for c in names for g in graphs if g not in validation.get(c, {})]
    if missing:
        raise TuneError(f"no validation accuracy of candidate {missing[0][0]!r} on {missing[0][1]!r}")
    ranks = {c: 0.0 for c in names}
    for graph in graphs:
        scores = [validation[c][graph] for c in names]
        for c, score in zip(names, scores, strict=True):
            better, equal = sum(s > score for s in scores), sum(s == score for s in scores)
            ranks[c] += better + (equal + 1) / 2  # equal scores share the mean of the ranks they span
    mean = {c: sum(validation[c][g] for g in graphs) / len(graphs) for c in names}
    return min(names, key=lambda c: (ranks[c], -mean[c], names.index(c)))


def plot_search(search: Search, trials_path: Path, importance_path: Path | None) -> list[Path]:
    """Validation accuracy per trial (pruned trials at their last check, the best so far as a line) and, when
    enough trials finished, each parameter's importance.

    Parameters
    ----------
    search
        The search.
    trials_path
        Where the trials' plot goes.
    importance_path
        Where the importance plot goes; ``None`` for none.
    """
    from .outputs.plots import pyplot, save_figure

    plt = pyplot()

    optuna = search.optuna
    done = [t for t in search.study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    pruned = [t for t in search.study.trials if t.state == optuna.trial.TrialState.PRUNED and t.intermediate_values]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.scatter([t.number for t in done], [t.value for t in done], label="completed", color="tab:blue")
    ax.scatter(
        [t.number for t in pruned],
        [max(t.intermediate_values.values()) for t in pruned],
        marker="x",
        color="tab:grey",
        label="pruned (best check)",
    )
    ordered = sorted(done, key=lambda t: t.number)
    running, best = [], -math.inf
    for t in ordered:
        best = max(best, t.value)
        running.append(best)
    if ordered:
        ax.step([t.number for t in ordered], running, where="post", color="tab:red", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel("validation accuracy (%)")
    ax.set_title(f"gca tune: {search.settings.dataset}")
    ax.legend(loc="lower right")
    save_figure(fig, trials_path)
    written = [trials_path]
    importances = search.importances() if importance_path is not None else {}
    if importances:
        names = list(importances)[::-1]
        fig, ax = plt.subplots(figsize=(6.4, 0.4 * len(names) + 1.2))
        ax.barh(names, [importances[n] for n in names], color="tab:blue")
        ax.set_xlabel("importance (fANOVA, share of the variance of validation accuracy)")
        ax.set_title(f"gca tune: {search.settings.dataset}")
        save_figure(fig, importance_path)
        written.append(importance_path)
    return written
