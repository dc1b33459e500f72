//! Every integration test, in one binary (`cargo test --features cli`): one module per file of
//! `tests/`, sharing `common`. Filter by module, e.g. `cargo test --features cli --test all cli::`.
//! The long cross-checks are `#[ignore]`d here and run by `.ci/run` as a separate step
//! with CBC (`cargo test --features cli,cbc --test cross_checks -- --include-ignored`).

mod common;

mod backends;
mod bpp_small;
mod cli;
mod consolidate;
mod contract_docs;
mod control_loop;
mod exact_anytime;
mod exact_lns;
mod exact_oracle;
mod exact_prefix;
mod exact_props;
mod execute;
mod fuzz_replay;
mod generator;
mod greedy_gap;
mod greedy_props;
mod harness;
mod input_rules;
mod limits;
mod module_layers;
mod observability;
mod rebalance;
mod report_snapshots;
mod scaling_policy;
mod schema;
mod seed_rules;
mod simulate;
mod sizing;
mod snapshots_output;
mod sweep_regressions;
mod unplaced_causes;
mod validation;
