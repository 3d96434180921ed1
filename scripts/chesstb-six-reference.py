#!/usr/bin/env python3
"""Random legal positions of four knights against a bare king (chesstb's
KNNNNK), with the values chesstb's own prober (`tools/probe_fen`) reads from
a directory of chesstb's shipping-format tables: one JSON object a line, the
fields of `shared/reference/chesstb-positions-5.jsonl`.

    scripts/chesstb-six-reference.py PROBE_FEN TABLE_DIR COUNT SEED > out.jsonl

TABLE_DIR holds `wdl/ dtz/ dtm/ dtm50/` with KNNNNK and the tables it
converts into (KNNNK, KNNK, KNK). Without KNNNNK's DTM50 file, `dtm50` is
null. Positions: the kings apart, four white
knights on random empty squares, a random side to move, kept when the side
not to move is not in check; a random half-move clock in 0..=99 (one in
four 0). Uses the standard library only.
"""

import json
import random
import subprocess
import sys

BATCH = 200


def square_name(sq):
    return "abcdefgh"[sq % 8] + str(sq // 8 + 1)


def knight_attacks(sq):
    f, r = sq % 8, sq // 8
    out = set()
    for df, dr in ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)):
        if 0 <= f + df < 8 and 0 <= r + dr < 8:
            out.add(sq + df + 8 * dr)
    return out


def fen(white_king, black_king, knights, turn, clock):
    board = {white_king: "K", black_king: "k"}
    board.update({n: "N" for n in knights})
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for file in range(8):
            piece = board.get(rank * 8 + file)
            if piece is None:
                empty += 1
                continue
            if empty:
                row += str(empty)
                empty = 0
            row += piece
        rows.append(row + (str(empty) if empty else ""))
    return "/".join(rows) + f" {turn} - - {clock} 1"


def random_positions(rng, count):
    out = []
    while len(out) < count:
        squares = rng.sample(range(64), 6)
        wk, bk, knights = squares[0], squares[1], squares[2:]
        if abs(wk % 8 - bk % 8) <= 1 and abs(wk // 8 - bk // 8) <= 1:
            continue
        turn = rng.choice("wb")
        # Only the black king can be in check; with White to move it must not be.
        if turn == "w" and any(bk in knight_attacks(n) for n in knights):
            continue
        clock = 0 if rng.random() < 0.25 else rng.randrange(100)
        out.append(fen(wk, bk, knights, turn, clock))
    return out


def parse(output):
    """`probe_fen`'s result lines, in input order."""
    results = []
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("result:"):
            continue
        fields = dict(f.split("=", 1) for f in line[len("result:"):].split())
        dtc_class, dtc_order, dtc_value = fields["dtc"].split("/")
        # The prober leaves DTM50 out when the directory has no DTM50 file.
        dtm50 = None
        if "dtm50" in fields:
            m_class, m_plies = fields["dtm50"].split("/")
            dtm50 = {"class": m_class, "plies": None if m_class == "DRAW" else int(m_plies)}
        results.append(
            {
                "wdl": fields["wdl"],
                "dtz_plies": int(fields["dtz"]),
                "dtc": {"class": dtc_class, "order": int(dtc_order), "value": int(dtc_value)},
                "dtm_plies": int(fields["dtm"]),
                "dtm50": dtm50,
            }
        )
    return results


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    probe, tables, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4], 0)
    rng = random.Random(seed)
    fens = random_positions(rng, count)
    dirs = []
    for kind in ("wdl", "dtz", "dtm", "dtm50"):
        dirs += [f"--{kind}", f"{tables}/{kind}/"]
    for start in range(0, len(fens), BATCH):
        batch = fens[start : start + BATCH]
        run = subprocess.run([probe, *dirs, *batch], capture_output=True, text=True, check=True)
        results = parse(run.stdout)
        if len(results) != len(batch):
            sys.exit(f"probe_fen answered {len(results)} of {len(batch)} positions:\n{run.stdout}{run.stderr}")
        for f, r in zip(batch, results):
            print(json.dumps({"fen": f, "material": "KNNNNK", **r}))


if __name__ == "__main__":
    main()
