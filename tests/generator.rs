//! The shared random-scenario generator produces valid, varied problems.
use crate::common;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn generated_problems_validate_and_keep_their_fleet(problem in common::problem(common::Size::MEDIUM)) {
        prop_assert!(!problem.components().is_empty());
        prop_assert!(!problem.azs().is_empty());
        // The fleet never starts broken: every existing instance's copies fit.
        let fleet = fleetplan::FinalFleet::apply(&problem, &[]).0;
        for instance in &fleet.instances {
            let capacity = problem.instance_types()[instance.type_index].capacity;
            prop_assert!(instance.used(&problem).fits_in(&capacity));
        }
    }

    #[test]
    fn reversing_the_input_keeps_it_valid(scenario in common::scenario(common::Size::SMALL)) {
        let forward = fleetplan::Problem::new(&scenario).is_ok();
        let backward = fleetplan::Problem::new(&common::reversed(&scenario)).is_ok();
        prop_assert_eq!(forward, backward);
    }
}
