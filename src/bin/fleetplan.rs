//! The `fleetplan` command line.
fn main() {}
