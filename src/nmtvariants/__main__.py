from nmtvariants.cli import run

raise SystemExit(run())
