//! Arbitrary bytes → `Problem::from_json`: never panics, and every error is explained.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match fleetplan::Problem::from_json(text) {
        Ok(problem) => {
            // Touch what engines rely on, so inconsistent indices would show up here.
            for type_index in (0..problem.instance_types().len()).map(fleetplan::TypeIndex::new) {
                for az_index in (0..problem.azs().len()).map(fleetplan::AzIndex::new) {
                    let _ = problem.launch_limit(type_index, az_index);
                }
            }
            let _ = problem.existing_copies_per_component();
        }
        Err(error) => {
            assert!(!error.issues().is_empty(), "an error without issues");
            for issue in error.issues() {
                assert!(!issue.message.is_empty(), "an issue without a message at {:?}", issue.path);
                // Only document-level problems may lack a path (a document that is one number
                // out of range, e.g. `-1e3081`, is one).
                assert!(!issue.path.is_empty() || issue.is_document_level(), "an issue without a path: {issue}");
            }
        }
    }
});
