//! Bytes → `Script::from_json`: never panics, every error is explained with a path; a valid,
//! small script runs with every invariant holding and replays byte for byte.
#![no_main]

use fleetplan::simulate::{Script, Simulator};
use libfuzzer_sys::fuzz_target;

/// Keeps each run fast, so the fuzzer explores shapes rather than sizes.
fn small(script: &Script, problem: &fleetplan::Problem) -> bool {
    let copies: u64 = problem.components().iter().map(|component| u64::from(component.copy_count)).sum();
    script.ticks <= 16
        && copies <= 64
        && script.scale_events.iter().all(|event| event.copy_count <= 16)
        && problem.components().len() <= 8
        && problem.fleet().len() <= 16
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Script::from_json_with(text, &fleetplan::ReadOptions::default()) {
        Ok((script, problem)) => {
            if !small(&script, &problem) {
                return;
            }
            let simulation = match Simulator::new().run(&script) {
                Ok(simulation) => simulation,
                Err(error) => panic!("a script that read cleanly does not validate: {error}"),
            };
            assert!(simulation.failures.is_empty(), "invariants broke:\n{}", simulation.to_table());
            let again = Simulator::new().run(&script).map(|again| again.to_json()).unwrap_or_default();
            assert_eq!(simulation.to_json(), again, "the simulation is not deterministic");
            let _ = simulation.to_svg();
        }
        Err(error) => {
            assert!(!error.issues().is_empty(), "an error without issues");
            for issue in error.issues() {
                assert!(!issue.message.is_empty(), "an issue without a message at {:?}", issue.path);
                // Only document-level problems may lack a path.
                assert!(
                    !issue.path.is_empty()
                        || issue.is_document_level()
                        // The script's total event count is about the whole script too.
                        || issue.message.contains("entries in CloudCapacity"),
                    "an issue without a path: {issue}"
                );
            }
        }
    }
});
