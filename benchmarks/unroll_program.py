"""Write a pimsim-nn program whose every core runs its stream K times in a row.

Usage::

    python benchmarks/unroll_program.py PROGRAM CONFIG K OUT_DIR

pimsim-nn's throughput mode loops every core's stream and counts whole rounds
in a fixed window, so a 130 ms window at a 16 ms interval measures the interval
only to about one round in eight. Latency mode reports the finish time to the
nanosecond. A program whose streams are repeated K times runs, in latency
mode, exactly the first K rounds of throughput mode (each core goes on with
its next round as soon as it has fetched the last instruction; event
registers and transfers carry over), so ``(L(K2) - L(K1)) / (K2 - K1)`` for
two runs is the simulated interval between rounds K1 and K2 to the nanosecond.

PROGRAM is a single-file JSON program (plain or gzip); OUT_DIR receives
``program.json.gz`` and a copy of CONFIG in latency mode whose network table
path is made absolute. Memory: the whole program as Python objects.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("program", type=pathlib.Path)
    parser.add_argument("config", type=pathlib.Path)
    parser.add_argument("k", type=int)
    parser.add_argument("out", type=pathlib.Path)
    args = parser.parse_args()
    with args.program.open("rb") as probe:
        compressed = probe.read(2) == b"\x1f\x8b"
    opener = gzip.open if compressed else open
    with opener(args.program, "rt", encoding="utf-8") as handle:
        program = json.load(handle)
    args.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out / "program.json.gz", "wt", encoding="utf-8") as handle:
        handle.write('{"config":' + json.dumps(program.pop("config")))
        for key in sorted(program):
            handle.write(f',"{key}":' + json.dumps(program[key] * args.k))
        handle.write("}")
    config = json.loads(args.config.read_text())
    network = config["chip_config"]["network_config"]
    network["net_config_file_path"] = str(
        (args.config.parent / network["net_config_file_path"]).resolve()
    )
    config["sim_config"] = {**config.get("sim_config", {}), "sim_mode": 1}
    config["sim_config"]["latency_timeout_ms"] = 100000
    (args.out / "config.json").write_text(json.dumps(config, indent=1))
    print(f"{args.out}: {args.k} rounds per core")


if __name__ == "__main__":
    main()
