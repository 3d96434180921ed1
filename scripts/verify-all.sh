#!/usr/bin/env bash
# The exhaustive tier: the same checks as the quick tier of
# `cargo test --release`, on whole populations instead of samples:
#  - every legal position of every built-in table (3 and 4 pieces, both sides
#    to move) against Syzygy (WDL50; DTZ50'' on the side each .rtbz stores),
#    Gaviota (DTM, 3 pieces), its
#    own successors (DTZ, DTM, and DTM50 at every half-move clock) and, where
#    only mate zeroes, DTZ == DTM (tests/builtin_vs_tables.rs); likewise the
#    5-piece tables KNNvKN and KRBvKQ, generated first (about 3 minutes;
#    TBSERVER_BUILTIN_TEST_FIVE names others, or `all` for the 13 with a
#    Syzygy file in ../shared: about 3 hours more);
#  - chesstb's tables (shipping format) against the built-in tables: WDL,
#    DTZ, DTM and DTM50 at every clock 0-99 on every position of every
#    3-4-piece material whose side to move the files store, 1 in 8 of the
#    side they leave out to be rebuilt by search, with DTC on that 1 in 8
#    (tests/chesstb_vs_builtin.rs);
#  - chesstb's 5-piece tables KNNNK and KQKRB against the built-in KNNNvK
#    and KRBvKQ, the same metrics on the same terms (tests/chesstb_five.rs);
#  - the DTM50-style search against the DTM50 tables on 1000 positions, and
#    150 short mates proven exactly (tests/dtm50.rs);
#  - the block format against the generator's arrays: DTZ50'', DTM and DTM50 at every
#    clock 0-99 of every legal position of the 35 tables of 3-4 pieces, and
#    DTZ50'', DTM and DTM50's segments of every legal position of KNNvKN,
#    KRBvKQ and KNNNvK (TBSERVER_FORMAT_FIVE names fewer)
#    (tests/builtin_format.rs);
#  - generation spread as the Kubernetes Jobs spread it: all 35 tables of 3-4
#    pieces, 3 processes per dependency wave over one directory, byte for
#    byte the files of one plain run (tests/cluster_generation.rs).
# Each check prints what it compared; the script prints its time. Needs
# ../shared (or TBSERVER_SHARED_DIR), like the tests.
#
# TBSERVER_EXHAUSTIVE_SHARE=k/n checks the indexes = k mod n of every table
# (the k-th of the three whole 5-piece format checks, the search's
# positions = k mod n, the sharded generation of all 35 tables when k = 0,
# else of 10): CI takes k = commit count mod 3, so any three consecutive
# runs cover everything. The short mates run whole every time.
#
#   scripts/verify-all.sh            # everything: about an hour on 2 cores
#   TBSERVER_EXHAUSTIVE_SHARE=1/3 scripts/verify-all.sh   # CI's share
#   TBSERVER_BUILTIN_TEST_ONLY=KQvKR,KPvKP scripts/verify-all.sh   # some tables
set -euo pipefail
cd "$(dirname "$0")/.."
export TBSERVER_EXHAUSTIVE=1
start=$SECONDS
echo "exhaustive tier, share: ${TBSERVER_EXHAUSTIVE_SHARE:-all}"
TBSERVER_BUILTIN_TEST_FIVE=${TBSERVER_BUILTIN_TEST_FIVE-KNNvKN,KRBvKQ} cargo test --release --test builtin_vs_tables
cargo test --release --test chesstb_vs_builtin
cargo test --release --test chesstb_five
cargo test --release --test dtm50 -- search_agrees_with_dtm50_tables search_proves_short_mates_exactly
cargo test --release --test builtin_format
cargo test --release --test cluster_generation -- sharded_waves_make_the_same_files_as_one_run
echo "exhaustive tier: passed in $((SECONDS - start)) s"
