//! Every bundled scenario loads and validates.
use fleetplan::Problem;

#[test]
fn every_bundled_scenario_validates() {
    let mut count = 0;
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let problem = Problem::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!problem.components().is_empty(), "{}", path.display());
        count += 1;
    }
    assert!(count >= 5);
}
