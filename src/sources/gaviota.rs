//! Gaviota DTM tables through `gaviota-sys`.
