//! Why copies could not be placed, in terms a person can act on.

use crate::fleet::FinalFleet;
use crate::plan::Unplaced;
use crate::problem::Problem;

/// `Unplaced` entries for a final fleet: per component with missing copies, how many and why.
pub fn unplaced(problem: &Problem, fleet: &FinalFleet) -> Vec<Unplaced> {
    let per_az = fleet.copies_per_az(problem);
    problem
        .components
        .iter()
        .zip(per_az)
        .filter_map(|(component, counts)| {
            let placed: u64 = counts.iter().sum();
            let missing = u64::from(component.copy_count).saturating_sub(placed);
            (missing > 0).then(|| Unplaced {
                inference_component_name: component.name.clone(),
                copy_count: missing,
                reasons: vec![format!("{missing} copies of {} could not be placed", component.name)],
            })
        })
        .collect()
}
