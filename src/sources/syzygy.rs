//! Syzygy WDL50/DTZ50'' tables through `shakmaty-syzygy`, memory-mapped.
