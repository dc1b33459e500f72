//! Shared test helpers: bundled scenarios, the seeded scenario generator (`generator.rs`) and its
//! proptest strategies, and temporary files for the command-line tests.
#![allow(dead_code)]

use fleetplan::*;
use proptest::prelude::*;

/// Every bundled scenario as (file name, JSON text), sorted by name. Only the files directly in
/// `scenarios/`: its subdirectories hold other documents (`models/` for `fleetplan size`,
/// `simulations/` for the simulator).
pub fn bundled_scenarios() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|extension| extension == "json"))
        .map(|path| {
            let name = path.file_name().expect("file name").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("readable scenario"))
        })
        .collect();
    out.sort();
    out
}

/// A bundled scenario, validated.
pub fn bundled_problem(name: &str) -> Problem {
    let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("bundled scenario exists");
    Problem::from_json(&text).expect("bundled scenario is valid")
}

/// A scenario of `tests/fixtures/`, validated.
pub fn fixture_problem(name: &str) -> Problem {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Problem::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub mod generator;

pub use generator::Config;

/// Random valid scenarios of `config` (the one generator, `generator.rs`).
pub fn scenario(config: Config) -> impl Strategy<Value = Scenario> {
    generator::scenarios(config)
}

/// Random valid problems of `config`. The generator makes only valid scenarios, so an invalid
/// one fails the test instead of being skipped.
pub fn problem(config: Config) -> impl Strategy<Value = Problem> {
    scenario(config).prop_map(|scenario| match Problem::new(&scenario) {
        Ok(problem) => problem,
        Err(error) => panic!("the generator made an invalid scenario: {error}\n{scenario:?}"),
    })
}

/// The scenario with components, pools, AZs, capacity and fleet listed in reverse order.
pub fn reversed(scenario: &Scenario) -> Scenario {
    let mut out = scenario.clone();
    out.availability_zones.reverse();
    out.instance_types.reverse();
    out.capacity.reverse();
    out.endpoint.instance_pools.reverse();
    out.inference_components.reverse();
    for component in &mut out.inference_components {
        if let Some(specs) = &mut component.specifications {
            specs.reverse();
        }
    }
    out.fleet.instances.reverse();
    out.fleet.copies.reverse();
    out
}

/// A file in the temp dir, unique per test process and file (a counter: test modules share one
/// binary and may pick the same names), removed on drop. The name keeps `name` as its suffix.
pub struct TempFile(std::path::PathBuf);

impl TempFile {
    pub fn new(name: &str, contents: &str) -> TempFile {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("fleetplan-test-{}-{number}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("write temp file");
        TempFile(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
