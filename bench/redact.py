"""How long redacting 1 MiB of text takes (core/redact.py's redact_text, which show, export,
report, the status page and the metrics run over names, keywords and causes).

    .venv/bin/python bench/redact.py [ROUNDS]

Prints, for each shape of text, the best of ROUNDS (default 5) runs in milliseconds: a run of
scheme characters without '://' (which took quadratic time before), and prose full of URLs.
Imports nothing from bench/. Figures depend on the machine: compare runs, not absolutes."""

from __future__ import annotations

import sys
import time

from monitor_tick.core.redact import redact_text

MIB = 1024 * 1024
_PROSE = "see https://u:p@h.example/x?token=s3cr3t "
SHAPES = {
    "1 MiB of letters, no '://'": "a" * MIB,
    "1 MiB of prose with URLs": (_PROSE * (MIB // len(_PROSE) + 1))[:MIB],
}


def main(rounds: int) -> None:
    for shape, text in SHAPES.items():
        best_s = float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            redact_text(text)
            best_s = min(best_s, time.perf_counter() - started)
        print(f"{shape:<28} {best_s * 1000:8.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
