//! Inputs that once crashed a fuzz target, or that are hostile by construction, replayed through
//! the checks the fuzz targets make (fuzz/fuzz_targets/): reading never panics and every error is
//! explained; a valid small scenario's greedy plan verifies, is deterministic and renders; its
//! rebalance plan passes `verify_rebalance`.
//!
//! A new crash from `cargo fuzz` (fuzz/artifacts/TARGET/crash-*) goes into
//! `tests/data/fuzz-inputs/` under a name that says what it is, without a `.json` extension (the
//! engine harness reads every `.json` file under `tests/data/` as a valid scenario).

use fleetplan::__internal::validation_text;
use fleetplan::{
    plan_greedy, plan_table, verify, verify_rebalance, violations_table, Problem, Rebalancer, Status, ViolationKind,
};

fn inputs() -> Vec<(String, Vec<u8>)> {
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fuzz-inputs");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(folder)
        .expect("tests/data/fuzz-inputs exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            (name, std::fs::read(&path).expect("readable input"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_saved_fuzz_input_replays_cleanly() {
    let inputs = inputs();
    assert!(inputs.len() >= 8, "inputs missing: {}", inputs.len());
    let mut valid = 0;
    for (name, bytes) in inputs {
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        let problem = match Problem::from_json(text) {
            Ok(problem) => problem,
            Err(error) => {
                // Every error says where and what.
                assert!(!error.issues().is_empty(), "{name}: an error without issues");
                for issue in error.issues() {
                    assert!(!issue.message.is_empty(), "{name}: an issue without a message");
                    // Only document-level problems may lack a path (as in fuzz/fuzz_targets/validate.rs).
                    assert!(
                        !issue.path.is_empty() || issue.is_document_level(),
                        "{name}: an issue without a path: {issue}"
                    );
                }
                let _ = validation_text(&error);
                continue;
            }
        };
        valid += 1;
        let plan = plan_greedy(&problem);
        let violations: Vec<_> = verify(&problem, &plan)
            .into_iter()
            .filter(|violation| !(plan.status == Status::Infeasible && violation.kind == ViolationKind::InstanceBounds))
            .collect();
        assert!(violations.is_empty(), "{name}: {}", violations_table(&violations));
        assert_eq!(plan, plan_greedy(&problem), "{name}: greedy is not deterministic");
        let _ = plan_table(&problem, &plan);
        let rebalance = Rebalancer::new().self_check(false).plan(&problem);
        assert!(verify_rebalance(&problem, &rebalance).is_empty(), "{name}: rebalance plan rejected");
    }
    // Some of the inputs must get past validation, or the plan checks above test nothing.
    assert!(valid >= 2, "only {valid} inputs were valid scenarios");
}

#[test]
fn only_whole_document_issues_are_document_level() {
    let issues = |text: &str| Problem::from_json(text).err().map(|error| error.issues().to_vec()).unwrap_or_default();
    for text in ["-1e3081", "[", "42"] {
        let found = issues(text);
        let pathless: Vec<_> = found.iter().filter(|issue| issue.path.is_empty()).collect();
        assert!(!pathless.is_empty() && pathless.iter().all(|issue| issue.is_document_level()), "{text}: {found:?}");
    }
    // An out-of-range number inside the document has a path and is not document-level.
    let nested = issues(r#"{"Endpoint": {"EndpointName": 1e999}}"#);
    let issue = nested.iter().find(|issue| issue.message.starts_with("number out of range")).expect("the number");
    assert_eq!((issue.path.as_str(), issue.is_document_level()), ("Endpoint.EndpointName", false));
}
