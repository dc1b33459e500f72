//! The exact backends cross-checked against each other with CBC (`--features cli,cbc`), in a
//! binary of its own so `.ci/run` does not rebuild every integration test with CBC:
//! `cargo test --features cli,cbc --test cross_checks -- --include-ignored`. The same module
//! runs in `tests/all.rs` without CBC (its long cases `#[ignore]`d there).

mod common;

mod backends;
