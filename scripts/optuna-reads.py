#!/usr/bin/env python3
"""Checks that Optuna reads a tidemark study (`tidemark sweep --storage`) as tidemark ranked it.

    scripts/optuna-reads.py STORAGE SWEEP_DIR [SWEEP_DIR...]

STORAGE is the study's journal file, or redis://HOST:PORT for a study in Redis. The study is
the one named by the first SWEEP_DIR's config.toml (run.name), whose sweep.json is compared
with what `optuna.load_study` returns for every trial: its params, state and value; and its
intermediate values with the per-epoch monitored values in the trial's snapshots.jsonl, in
whichever SWEEP_DIR (one per worker's --out) holds the trial's run directory. Prints one line
per study checked and exits 1 at the first difference. Needs Optuna 5 (CI installs it in a venv);
Redis needs the redis package too.
"""

import json
import math
import os
import sys
import tomllib
import warnings

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalRedisBackend

STATES = {"completed": "COMPLETE", "failed": "FAIL", "pruned": "PRUNED"}


def fail(message):
    sys.exit(f"optuna-reads: {message}")


def storage_of(spec):
    if spec.startswith("redis://"):
        return JournalStorage(JournalRedisBackend(spec))
    if not os.path.isfile(spec):
        fail(f"{spec}: no such journal file")
    return JournalStorage(JournalFileBackend(spec))


def literal(text):
    """A value as sweep.json shows it (TOML), as Python reads it."""
    return tomllib.loads(f"x = {text}")["x"]


def same(param, shown):
    """Whether Optuna's param is the value sweep.json holds (typed: a number, a string, a
    list; a list is an Optuna categorical's string)."""
    value = shown
    if isinstance(param, str) and param.startswith("["):
        param = literal(param)
    if isinstance(value, float) or isinstance(param, float):
        return math.isclose(float(param), float(value), rel_tol=1e-15)
    return param == value


def curve(dirs, name, monitor):
    """The trial's monitored value after each epoch, from its snapshots."""
    for d in dirs:
        path = os.path.join(d, name, "snapshots.jsonl")
        if os.path.isfile(path):
            values = {}
            for line in open(path):
                s = json.loads(line)
                if s["event"] == "epoch":
                    v = s["val_loss"] if monitor == "val_loss" else s.get("metrics", {}).get(monitor)
                    if v is not None:
                        values[s["epoch"]] = v
            return values
    fail(f"{name}: no run directory in {', '.join(dirs)}")


def main():
    if len(sys.argv) < 3:
        fail(__doc__.strip().splitlines()[2].strip())
    spec, dirs = sys.argv[1], sys.argv[2:]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    config = tomllib.load(open(os.path.join(dirs[0], "config.toml"), "rb"))
    name = config["run"]["name"]
    sweep = json.load(open(os.path.join(dirs[0], "sweep.json")))
    study = optuna.load_study(study_name=name, storage=storage_of(spec))
    trials = {t.system_attrs.get("tidemark:trial"): t for t in study.get_trials(deepcopy=False)}
    rows = sweep["trials"]
    if len(trials) != len(rows):
        fail(f"Optuna reads {len(trials)} trials, sweep.json has {len(rows)}")
    epochs = 0
    for row in rows:
        t = trials.get(row["trial"])
        if t is None:
            fail(f"{row['name']}: not in the study Optuna reads")
        if t.state.name != STATES.get(row["status"]):
            fail(f"{row['name']}: Optuna reads {t.state.name}, sweep.json {row['status']}")
        if t.value != row["monitored"]:
            fail(f"{row['name']}: Optuna reads value {t.value}, sweep.json {row['monitored']}")
        if set(t.params) != set(row["values"]):
            fail(f"{row['name']}: params {sorted(t.params)} against {sorted(row['values'])}")
        for key, shown in row["values"].items():
            if not same(t.params[key], shown):
                fail(f"{row['name']}: {key} = {t.params[key]!r} in Optuna, {shown} in sweep.json")
        own = curve(dirs, row["name"], sweep["monitor"])
        if t.state.name == "COMPLETE" and t.intermediate_values != own:
            fail(f"{row['name']}: intermediate values {t.intermediate_values} against {own}")
        epochs += len(t.intermediate_values)
    print(f"optuna {optuna.__version__} reads study {name} in {spec}: {len(rows)} trials, their "
          f"params, states, values and {epochs} intermediate values, as sweep.json and the runs' "
          "snapshots hold them")


if __name__ == "__main__":
    main()
