"""Cost of compaction (and of parsing) against history length: is it linear, and is 10,000 iterations fast?

    python benchmarks/bench_compaction.py [--reps N] [--sizes 100,1000,10000] [--budget 30720]

For each size, a synthetic state file (tests/synthetic.py, upstream template format) with that many detailed
iteration entries is timed through:

  parse     statefile.parse(text)                      (the document model; markdown-it block scan)
  history   doc.history on a fresh parse              (reading every entry; compact() needs it)
  compact   statefile.compact(fresh doc, policy)       (includes reading the history, as a caller would pay)
  again     compact() of the compacted document        (the steady state: one new entry per run)

Prints median milliseconds per operation, the per-iteration cost, and the 10k/1k ratio (10 means linear).
benchmarks/run.py runs this with the others (goals: linear, 10,000 iterations parsed and compacted in under 1 s).
"""

from __future__ import annotations

import argparse

from _fixtures import synthetic_state
from _timing import Row, median_ms

from statefile.model.document import parse
from statefile.policy.compaction import CompactionPolicy, compact


def measure(iterations: int, reps: int, policy: CompactionPolicy) -> dict[str, float]:
    text = synthetic_state("bench", iterations, seed=1, lessons=30, foreclosed=20)
    holder: dict[str, object] = {}

    def fresh() -> None:
        holder["doc"] = parse(text)

    def history() -> object:
        return holder["doc"].history  # type: ignore[attr-defined]

    def run() -> object:
        return compact(holder["doc"], policy)  # type: ignore[arg-type]

    compacted = compact(parse(text), policy).document
    return {
        "bytes": len(text.encode()),
        "parse": median_ms(fresh, reps),
        "history": median_ms(history, reps, setup=fresh),
        "compact": median_ms(run, reps, setup=fresh),
        "again": median_ms(lambda: compact(compacted, policy), reps),
    }


def rows(quick: bool = False, sizes: tuple[int, ...] = (100, 1000, 10_000)) -> list[Row]:
    """Rows for benchmarks/run.py: parse and compact at each size, and the 10k/1k ratios (10 = linear)."""
    policy = CompactionPolicy(max_bytes=30720)
    results = {n: measure(n, 3 if quick else 5, policy) for n in sizes}
    bench = "parse and compaction"
    out: list[Row] = []
    for n, row in results.items():
        size = f"{n:,} iterations ({row['bytes'] / 1024:,.0f} KB)"
        out.append(Row(bench, size, "parse", row["parse"], note=f"{row['parse'] * 1000 / n:.0f} µs/iteration"))
        total = row["parse"] + row["compact"]
        out.append(
            Row(
                bench,
                size,
                "parse + compact",
                total,
                goal="< 1000 ms" if n >= 10_000 else "",
                met=total < 1000 if n >= 10_000 else None,
                note=f"compact {row['compact']:.1f} ms, {row['compact'] * 1000 / n:.0f} µs/iteration; "
                f"again (steady state) {row['again']:.2f} ms",
            )
        )
    if 1000 in results and 10_000 in results:
        for key, label in (("parse", "parse"), ("compact", "compact")):
            ratio = results[10_000][key] / results[1000][key]
            out.append(
                Row(
                    bench,
                    "10,000 vs 1,000",
                    f"{label} time ratio (10 = linear)",
                    results[10_000][key],
                    versus=f"{label} at 1,000",
                    ratio=ratio,
                    goal="≤ 12× (linear)",
                    met=ratio <= 12,
                )
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--budget", type=int, default=30720)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    policy = CompactionPolicy(max_bytes=args.budget)
    rows = {n: measure(n, args.reps, policy) for n in sizes}
    print(f"median of {args.reps} runs, budget {args.budget} bytes")
    print(
        f"{'iterations':>10} {'file KB':>9} {'parse ms':>9} {'history ms':>11} {'compact ms':>11} "
        f"{'µs/iter':>8} {'again ms':>9}"
    )
    for n, row in rows.items():
        print(
            f"{n:>10} {row['bytes'] / 1024:>9.0f} {row['parse']:>9.1f} {row['history']:>11.1f} "
            f"{row['compact']:>11.1f} {row['compact'] * 1000 / n:>8.1f} {row['again']:>9.2f}"
        )
    if 1000 in rows and 10000 in rows:
        ratio = {key: rows[10000][key] / rows[1000][key] for key in ("parse", "history", "compact")}
        print("10k/1k ratio (10 = linear): " + ", ".join(f"{key} {value:.1f}" for key, value in ratio.items()))


if __name__ == "__main__":
    main()
