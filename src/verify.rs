//! The independent checker: does a plan (from any source) satisfy docs/contract.md §2?
//!
//! `verify` shares nothing with the planners except [`FinalFleet::apply`] and the objective
//! definition; it re-derives the final fleet from the actions and checks every hard constraint,
//! the SPREAD rule (for plans from an empty fleet), and that the plan's reported objective and
//! `Unplaced` counts are what its actions actually reach.

use std::collections::{BTreeMap, BTreeSet};

use crate::fleet::{objective, FinalFleet};
use crate::plan::{action_rank, Action, Plan, Status};
use crate::problem::{PlacementStrategy, Problem, Resources};

pub use crate::violation::{Violation, ViolationKind};

/// Checks a plan against the problem; returns every violation (empty = valid).
///
/// Besides the hard constraints and the SPREAD rule, every claim the plan makes is checked when
/// it is given (contract §5): `Status: Infeasible` only on a plan that breaks a hard constraint,
/// the `Objective` and `Unplaced` counts its actions reach (and `Unplaced` naming only
/// components of the scenario), a `Bound` the plan itself does not beat, and the order of
/// `Actions` (contract §4.1).
pub fn verify(problem: &Problem, plan: &Plan) -> Vec<Violation> {
    let (fleet, mut violations) = FinalFleet::apply(problem, &plan.actions);
    check_fleet(problem, &fleet, plan.launches(), &mut violations);
    let hard_broken = violations.iter().any(|violation| violation.kind.is_hard_constraint());
    check_order(problem, &fleet, &plan.actions, &mut violations);
    let mut push = |kind, message| violations.push(Violation { kind, message });

    // Accounting: what the plan claims must match its actions. Parts a plan from another source
    // left out (contract §5) are derived, not checked.
    if !plan.omitted.status && plan.status == Status::Infeasible && !hard_broken {
        push(
            ViolationKind::Accounting,
            "Status is Infeasible, but the plan meets every hard constraint (it is feasible)".to_string(),
        );
    }
    let actual = objective(problem, &fleet);
    let mut reported = plan.objective.clone();
    if plan.omitted.cost_unit {
        reported.cost_unit = actual.cost_unit;
    }
    if !plan.omitted.objective && actual != reported {
        push(
            ViolationKind::Accounting,
            format!("reported objective ({}) differs from what the actions reach ({actual})", plan.objective),
        );
    }
    if let Some(bound) = &plan.bound {
        if actual.key() < bound.key() {
            push(
                ViolationKind::Accounting,
                format!("bound ({bound}) is worse than the plan's own objective ({actual})"),
            );
        }
    }
    let per_az = fleet.copies_per_az(problem);
    let unplaced_given = !plan.omitted.unplaced;
    for (index, component) in problem.components.iter().enumerate().filter(|_| unplaced_given) {
        let placed: u64 = per_az[index].iter().sum();
        let missing = u64::from(component.copy_count).saturating_sub(placed);
        let reported: u64 = plan
            .unplaced
            .iter()
            .filter(|entry| entry.inference_component_name == component.name)
            .map(|entry| entry.copy_count)
            .sum();
        if missing != reported {
            push(
                ViolationKind::Accounting,
                format!("{}: {missing} copies are missing but Unplaced reports {reported}", component.name),
            );
        }
    }
    for entry in plan.unplaced.iter().filter(|entry| problem.component_index(&entry.inference_component_name).is_none())
    {
        push(
            ViolationKind::Accounting,
            format!(
                "Unplaced names {:?}, which is not a component of the scenario ({} copies)",
                entry.inference_component_name, entry.copy_count
            ),
        );
    }
    violations
}

/// The name of an action kind, as in the plan's `Type`.
fn kind_name(action: &Action) -> &'static str {
    match action {
        Action::LaunchInstance { .. } => "LaunchInstance",
        Action::PlaceCopy { .. } => "PlaceCopy",
        Action::RemoveCopy { .. } => "RemoveCopy",
        Action::TerminateInstance { .. } => "TerminateInstance",
    }
}

/// Contract §4.1: `Actions` are launches, removals, placements, terminations, and executing them
/// one after another never overbooks an instance. An instance overbooked in the final fleet is a
/// `Packing` violation already; here only an instance that fits at the end but not on the way.
fn check_order(problem: &Problem, fleet: &FinalFleet, actions: &[Action], violations: &mut Vec<Violation>) {
    let mut push = |message| violations.push(Violation { kind: ViolationKind::Order, message });
    let mut latest: Option<(usize, &Action)> = None;
    let mut out_of_order = Vec::new();
    for (index, action) in actions.iter().enumerate() {
        match latest {
            Some((_, before)) if action_rank(action) < action_rank(before) => {
                out_of_order.push((index, action, before))
            }
            _ => latest = Some((index, action)),
        }
    }
    if let Some(&(index, action, before)) = out_of_order.first() {
        let more = match out_of_order.len() - 1 {
            0 => String::new(),
            1 => " (and 1 more action out of order)".to_string(),
            n => format!(" (and {n} more actions out of order)"),
        };
        push(format!(
            "Actions[{index}] ({}) comes after a {}: the order is launches, removals, placements, terminations{more}",
            kind_name(action),
            kind_name(before)
        ));
    }

    // Replays the actions in order, by id, with each instance's copies; actions that do not apply
    // are `Reference` violations already and are skipped.
    let fits_at_end: BTreeSet<&str> = fleet
        .instances
        .iter()
        .filter(|instance| instance.used(problem).fits_in(&problem.types[instance.type_index].capacity))
        .map(|instance| instance.id.as_str())
        .collect();
    let mut running: BTreeMap<&str, (usize, BTreeMap<usize, u32>)> = problem
        .fleet
        .iter()
        .map(|existing| (existing.id.as_str(), (existing.type_index, existing.copies.iter().copied().collect())))
        .collect();
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    for (index, action) in actions.iter().enumerate() {
        match action {
            Action::LaunchInstance { instance_id, instance_type, .. } => {
                if let (false, Some(type_index)) =
                    (running.contains_key(instance_id.as_str()), problem.type_index(instance_type))
                {
                    running.insert(instance_id, (type_index, BTreeMap::new()));
                }
            }
            Action::RemoveCopy { component, instance_id } => {
                let component = problem.component_index(component);
                if let (Some(component), Some((_, copies))) = (component, running.get_mut(instance_id.as_str())) {
                    if let Some(count) = copies.get_mut(&component).filter(|count| **count > 0) {
                        *count -= 1;
                    }
                }
            }
            Action::PlaceCopy { component, instance_id, .. } => {
                let component = problem.component_index(component);
                let (Some(component), Some((type_index, copies))) = (component, running.get_mut(instance_id.as_str()))
                else {
                    continue;
                };
                *copies.entry(component).or_insert(0) += 1;
                let capacity = problem.types[*type_index].capacity;
                let used = problem.copies_footprint(*type_index, copies);
                let id = instance_id.as_str();
                if !used.fits_in(&capacity) && fits_at_end.contains(id) && reported.insert(id) {
                    push(format!(
                        "executing Actions in order overbooks {id} at Actions[{index}] ({}): {} (it fits only \
                         after later actions)",
                        kind_name(action),
                        used.overbooking_text(&capacity)
                    ));
                }
            }
            Action::TerminateInstance { .. } => {}
        }
    }
}

/// Checks the hard constraints and the SPREAD rule on a final fleet.
pub fn check_fleet(problem: &Problem, fleet: &FinalFleet, launches: usize, violations: &mut Vec<Violation>) {
    let mut push = |kind, message| violations.push(Violation { kind, message });
    check_packing_and_draining(problem, fleet, &mut push);
    check_capacity(problem, fleet, &mut push);
    check_instance_bounds(problem, fleet, launches, &mut push);
    check_copy_counts(problem, fleet, &mut push);
    // SPREAD, judged on plans from an empty fleet.
    if problem.fleet.is_empty() {
        for violation in spread_violations(problem, fleet) {
            push(ViolationKind::Spread, violation);
        }
    }
}

/// 1. Packing; draining instances (contract §6) keep their copies but receive no new one.
fn check_packing_and_draining(problem: &Problem, fleet: &FinalFleet, push: &mut impl FnMut(ViolationKind, String)) {
    for instance in &fleet.instances {
        let capacity = problem.types[instance.type_index].capacity;
        let used = instance.used(problem);
        if !used.fits_in(&capacity) {
            push(
                ViolationKind::Packing,
                format!(
                    "{} ({}): {}",
                    instance.id,
                    problem.types[instance.type_index].name,
                    used.overbooking_text(&capacity)
                ),
            );
        }
    }

    // Draining instances (contract §6) keep their copies but receive no new one.
    for instance in &fleet.instances {
        let draining = instance.existing.and_then(|index| problem.fleet.get(index)).is_some_and(|e| e.draining);
        let placed: u32 = instance.new_copies.values().sum();
        if draining && placed > 0 {
            let names: Vec<&str> = instance
                .new_copies
                .keys()
                .filter_map(|&component| problem.components.get(component).map(|c| c.name.as_str()))
                .collect();
            push(
                ViolationKind::Draining,
                format!(
                    "{} is Draining but receives {placed} new cop{} ({})",
                    instance.id,
                    if placed == 1 { "y" } else { "ies" },
                    names.join(", ")
                ),
            );
        }
    }
}

/// 3. Capacity: launches per (type, AZ) within `Reserved + Available`, none while blocked, reservation slots.
fn check_capacity(problem: &Problem, fleet: &FinalFleet, push: &mut impl FnMut(ViolationKind, String)) {
    for (&(type_index, az_index), &(total, reserved)) in &fleet.launches {
        let limit = problem.launch_limit(type_index, az_index);
        let name = &problem.types[type_index.index()].name;
        let az = &problem.azs[az_index.index()];
        if let Some(block) = problem.capacity_block(type_index, az_index) {
            push(
                ViolationKind::Capacity,
                format!(
                    "{total} launches of {name} in {az}, but it is blocked by {} at {} until {}",
                    block.event, block.time, block.until
                ),
            );
        } else if let Some(allowed) = limit.total() {
            if total > allowed {
                push(
                    ViolationKind::Capacity,
                    format!("{total} launches of {name} in {az}, but only {allowed} are obtainable (Reserved {} + Available {})", limit.reserved, limit.available.unwrap_or(0)),
                );
            }
        }
        if reserved > limit.reserved {
            push(
                ViolationKind::Capacity,
                format!(
                    "{reserved} launches of {name} in {az} marked Reserved, but only {} reservation slots exist",
                    limit.reserved
                ),
            );
        }
    }
}

/// 4. Instance bounds, and existing instances left empty although the fleet could shrink.
fn check_instance_bounds(
    problem: &Problem,
    fleet: &FinalFleet,
    launches: usize,
    push: &mut impl FnMut(ViolationKind, String),
) {
    let size = fleet.instances.len() as u64;
    let scaling = problem.scaling;
    if size < u64::from(scaling.min_instances) {
        push(
            ViolationKind::InstanceBounds,
            format!("{size} instances, below MinInstanceCount {}", scaling.min_instances),
        );
    }
    if let Some(max) = scaling.max_instances {
        if size > u64::from(max) {
            if launches > 0 {
                push(
                    ViolationKind::InstanceBounds,
                    format!("{size} instances after launching {launches}, above MaxInstanceCount {max}"),
                );
            } else {
                for instance in fleet.instances.iter().filter(|instance| instance.copies.is_empty()) {
                    push(
                        ViolationKind::InstanceBounds,
                        format!(
                            "{} is empty and kept although the fleet ({size}) is above MaxInstanceCount {max}",
                            instance.id
                        ),
                    );
                }
            }
        }
    }

    // Existing instances that end up empty are released unless MinInstanceCount needs them
    // (docs/contract.md §2). Above MaxInstanceCount without launches they are reported just above.
    let above_max_unlaunched = launches == 0 && scaling.max_instances.is_some_and(|max| size > u64::from(max));
    if size > u64::from(scaling.min_instances) && !above_max_unlaunched {
        let idle: Vec<&str> = fleet
            .instances
            .iter()
            .filter(|instance| instance.existing.is_some() && instance.copies.values().all(|&count| count == 0))
            .map(|instance| instance.id.as_str())
            .collect();
        if !idle.is_empty() {
            push(
                ViolationKind::InstanceBounds,
                format!(
                    "existing instance(s) {} end up empty and are kept, although the fleet ({size}) is above \
                     MinInstanceCount {}: release them",
                    idle.join(", "),
                    scaling.min_instances
                ),
            );
        }
    }
}

/// 5. Copy counts, and removals only of a real excess, never as a disguised move.
fn check_copy_counts(problem: &Problem, fleet: &FinalFleet, push: &mut impl FnMut(ViolationKind, String)) {
    let existing = problem.existing_copies_per_component();
    let per_az = fleet.copies_per_az(problem);
    for (index, component) in problem.components.iter().enumerate() {
        let placed: u64 = per_az[index].iter().sum();
        if placed > u64::from(component.copy_count) {
            push(
                ViolationKind::CopyCount,
                format!("{}: {placed} copies, CopyCount is {}", component.name, component.copy_count),
            );
        }
        let removed = u64::from(fleet.removed.get(&index).copied().unwrap_or(0));
        if removed > 0 {
            let excess = existing[index].saturating_sub(u64::from(component.copy_count));
            if removed > excess {
                push(
                    ViolationKind::Removal,
                    format!(
                        "{}: {removed} existing copies removed, but only {excess} exceed CopyCount {}",
                        component.name, component.copy_count
                    ),
                );
            }
            if fleet.instances.iter().any(|instance| instance.new_copies.contains_key(&index)) {
                push(
                    ViolationKind::Removal,
                    format!("{}: copies both removed and placed (a move; plan never moves copies)", component.name),
                );
            }
        }
    }
}

/// Pairs breaking the SPREAD rule: within an AZ, an instance with at least two more copies of a
/// SPREAD component than another eligible instance that has room for one more copy.
pub fn spread_violations(problem: &Problem, fleet: &FinalFleet) -> Vec<String> {
    // Its own count, not the engines' shared one (`engines::spread::spread_offenders_among`):
    // the checker stays independent of what it checks.
    // Linear in the fleet per component that has a heavy instance: instances holding at least
    // two copies are found from the copies themselves, resources used are computed once, and an
    // AZ is scanned for its lightest instance with room only when it has a heavy one.
    let mut heavy_by_component: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (position, instance) in fleet.instances.iter().enumerate() {
        for (&component, &count) in &instance.copies {
            if count >= 2 && problem.components[component].strategy == PlacementStrategy::Spread {
                heavy_by_component.entry(component).or_default().push(position);
            }
        }
    }
    if heavy_by_component.is_empty() {
        return Vec::new();
    }
    let used: Vec<Resources> = fleet.instances.iter().map(|instance| instance.used(problem)).collect();
    let mut found = Vec::new();
    for (component_index, heavy_instances) in heavy_by_component {
        let component = &problem.components[component_index];
        // Per AZ: the instance with room for one more copy holding the fewest copies (first in
        // fleet order on ties), found once.
        let mut lightest: BTreeMap<usize, Option<(u32, usize)>> = BTreeMap::new();
        for heavy_position in heavy_instances {
            let heavy = &fleet.instances[heavy_position];
            let heavy_count = heavy.copies_of(component_index);
            let light = *lightest.entry(heavy.az_index).or_insert_with(|| {
                fleet
                    .instances
                    .iter()
                    .zip(&used)
                    .enumerate()
                    .filter(|(_, (light, _))| light.az_index == heavy.az_index)
                    .filter(|(_, (light, used))| match component.placement_requirement(problem, light.type_index) {
                        Some(requirement) => {
                            used.plus(&requirement.resources).fits_in(&problem.types[light.type_index].capacity)
                        }
                        None => false,
                    })
                    .map(|(position, (light, _))| (light.copies_of(component_index), position))
                    .min()
            });
            if let Some((light_count, light_position)) = light {
                if light_count + 2 <= heavy_count {
                    found.push(format!(
                        "{}: {} holds {heavy_count} copies while {} in the same AZ holds {light_count} and has room for \
                         one more",
                        component.name, heavy.id, fleet.instances[light_position].id
                    ));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::finish;
    use crate::plan::{Objective, SolverKind, StopReason};
    use crate::ScenarioBuilder;

    fn problem() -> Problem {
        let scenario = ScenarioBuilder::new(["a", "b"])
            .pool("ml.g6.12xlarge", 1)
            .component("llm", 2, 4, 0.0, 1024)
            .max_imbalance("llm", 0)
            .capacity("ml.g6.12xlarge", "b", Some(0), 1)
            .instance_limits(0, Some(2))
            .build()
            .unwrap();
        Problem::new(&scenario).unwrap()
    }

    fn launch(id: &str, az: &str, reserved: bool) -> Action {
        Action::LaunchInstance {
            instance_id: id.into(),
            instance_type: "ml.g6.12xlarge".into(),
            availability_zone: az.into(),
            reserved,
        }
    }

    fn place(id: &str) -> Action {
        Action::PlaceCopy { component: "llm".into(), instance_id: id.into(), model_name: None }
    }

    fn kinds(problem: &Problem, actions: Vec<Action>) -> Vec<ViolationKind> {
        let plan = finish(problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, actions, None);
        verify(problem, &plan).into_iter().map(|v| v.kind).collect()
    }

    #[test]
    fn a_good_plan_has_no_violations() {
        let problem = problem();
        let actions = vec![launch("new-1", "a", false), launch("new-2", "b", true), place("new-1"), place("new-2")];
        assert_eq!(kinds(&problem, actions), vec![]);
    }

    #[test]
    fn each_broken_rule_is_reported() {
        let problem = problem();
        // Two copies of a 4-accelerator model on one 4-accelerator instance.
        assert_eq!(
            kinds(&problem, vec![launch("new-1", "a", false), place("new-1"), place("new-1")]),
            vec![ViolationKind::Packing]
        );
        // Capacity in b is one reserved slot: a second launch, and an extra Reserved flag, break it.
        assert_eq!(
            kinds(&problem, vec![launch("new-1", "b", true), launch("new-2", "b", true)]),
            vec![ViolationKind::Capacity, ViolationKind::Capacity]
        );
        // MaxInstanceCount 2.
        assert_eq!(
            kinds(
                &problem,
                vec![launch("new-1", "a", false), launch("new-2", "a", false), launch("new-3", "a", false)]
            ),
            vec![ViolationKind::InstanceBounds]
        );
        // Three copies where CopyCount is 2.
        let actions = vec![
            launch("new-1", "a", false),
            launch("new-2", "a", false),
            place("new-1"),
            place("new-2"),
            place("new-2"),
        ];
        assert!(kinds(&problem, actions).contains(&ViolationKind::CopyCount));
        // Unknown instance.
        assert_eq!(kinds(&problem, vec![place("nowhere")]), vec![ViolationKind::Reference]);
    }

    #[test]
    fn tampered_objective_and_unplaced_are_caught() {
        let problem = problem();
        let mut plan = finish(&problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, vec![], None);
        assert!(verify(&problem, &plan).is_empty());
        plan.objective.placed_copies = 2;
        plan.unplaced.clear();
        let found: Vec<ViolationKind> = verify(&problem, &plan).into_iter().map(|v| v.kind).collect();
        assert_eq!(found, vec![ViolationKind::Accounting, ViolationKind::Accounting]);
    }

    #[test]
    fn an_existing_instance_left_empty_is_released_unless_min_needs_it() {
        let build = |min: u32| {
            let scenario = ScenarioBuilder::new(["a"])
                .pool("ml.g6.12xlarge", 1)
                .component("llm", 1, 4, 0.0, 1024)
                .instance_limits(min, None)
                .fleet_instance("busy", "ml.g6.12xlarge", "a", false)
                .fleet_instance("idle", "ml.g6.12xlarge", "a", false)
                .fleet_copies("llm", "busy", 1)
                .build()
                .unwrap();
            Problem::new(&scenario).unwrap()
        };
        let terminate = Action::TerminateInstance { instance_id: "idle".into() };
        // Keeping the idle instance is a violation; releasing it is not.
        assert_eq!(kinds(&build(0), vec![]), vec![ViolationKind::InstanceBounds]);
        assert_eq!(kinds(&build(0), vec![terminate.clone()]), vec![]);
        // MinInstanceCount 2 needs it: keeping it is right, releasing it breaks the minimum.
        assert_eq!(kinds(&build(2), vec![]), vec![]);
        assert_eq!(kinds(&build(2), vec![terminate]), vec![ViolationKind::InstanceBounds]);
        // Removing the last copy without releasing the instance leaves it empty too.
        let remove = Action::RemoveCopy { component: "llm".into(), instance_id: "busy".into() };
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .component("llm", 0, 4, 0.0, 1024)
            .fleet_instance("busy", "ml.g6.12xlarge", "a", false)
            .fleet_copies("llm", "busy", 1)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        assert_eq!(kinds(&problem, vec![remove.clone()]), vec![ViolationKind::InstanceBounds]);
        let release = Action::TerminateInstance { instance_id: "busy".into() };
        assert_eq!(kinds(&problem, vec![remove, release]), vec![]);
    }

    #[test]
    fn spread_rule_flags_a_stacked_instance_next_to_an_empty_one() {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .component("small", 3, 1, 0.0, 1024)
            .component("filler", 1, 1, 0.0, 1024)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let small =
            |id: &str| Action::PlaceCopy { component: "small".into(), instance_id: id.into(), model_name: None };
        let filler = Action::PlaceCopy { component: "filler".into(), instance_id: "new-2".into(), model_name: None };
        let actions = vec![
            launch("new-1", "a", false),
            launch("new-2", "a", false),
            small("new-1"),
            small("new-1"),
            small("new-1"),
            filler,
        ];
        assert_eq!(kinds(&problem, actions), vec![ViolationKind::Spread]);
    }

    /// A fleet instance holding one 4-accelerator copy of `old` (CopyCount 0, so it may be
    /// removed) and room for nothing else; `llm` (CopyCount 1) fits only once `old` is gone.
    fn crowded() -> Problem {
        let scenario = ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .component("old", 0, 4, 0.0, 1024)
            .component("llm", 1, 4, 0.0, 1024)
            .fleet_instance("busy", "ml.g6.12xlarge", "a", false)
            .fleet_copies("old", "busy", 1)
            .build()
            .unwrap();
        Problem::new(&scenario).unwrap()
    }

    #[test]
    fn finish_lists_launches_removals_placements_terminations() {
        let problem = crowded();
        let remove = Action::RemoveCopy { component: "old".into(), instance_id: "busy".into() };
        let place = Action::PlaceCopy { component: "llm".into(), instance_id: "busy".into(), model_name: None };
        let plan = finish(
            &problem,
            SolverKind::Greedy,
            Status::Feasible,
            StopReason::Completed,
            vec![place.clone(), remove.clone()],
            None,
        );
        assert_eq!(plan.actions, vec![remove, place]);
        assert_eq!(verify(&problem, &plan), vec![]);
    }

    #[test]
    fn actions_out_of_order_and_overbooking_on_the_way_are_caught() {
        let problem = crowded();
        let mut plan = finish(&problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, vec![], None);
        plan.actions = vec![
            Action::PlaceCopy { component: "llm".into(), instance_id: "busy".into(), model_name: None },
            Action::RemoveCopy { component: "old".into(), instance_id: "busy".into() },
        ];
        plan.objective = objective(&problem, &FinalFleet::apply(&problem, &plan.actions).0);
        plan.unplaced.clear();
        let found = verify(&problem, &plan);
        let kinds: Vec<ViolationKind> = found.iter().map(|v| v.kind).collect();
        assert_eq!(kinds, vec![ViolationKind::Order, ViolationKind::Order], "{found:#?}");
        assert!(found[0].message.starts_with("Actions[1] (RemoveCopy) comes after a PlaceCopy"), "{found:#?}");
        assert!(found[1].message.contains("overbooks busy at Actions[0]"), "{found:#?}");
    }

    #[test]
    fn an_infeasible_label_on_a_feasible_plan_is_caught() {
        let problem = problem();
        let actions = vec![launch("new-1", "a", false), launch("new-2", "b", true), place("new-1"), place("new-2")];
        let mut plan = finish(&problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, actions, None);
        assert!(verify(&problem, &plan).is_empty());
        plan.status = Status::Infeasible;
        let found = verify(&problem, &plan);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].kind, ViolationKind::Accounting);
        assert!(found[0].message.starts_with("Status is Infeasible"), "{found:#?}");
        // A plan that does break a hard constraint may say so.
        plan.actions.push(place("new-1"));
        plan.objective = objective(&problem, &FinalFleet::apply(&problem, &plan.actions).0);
        let found = verify(&problem, &plan);
        assert!(found.iter().all(|v| !v.message.starts_with("Status")), "{found:#?}");
    }

    #[test]
    fn messages_word_objectives_instead_of_printing_structures() {
        let problem = problem();
        let mut plan = finish(&problem, SolverKind::Greedy, Status::Feasible, StopReason::Completed, vec![], None);
        plan.objective.placed_copies = 2;
        plan.bound = Some(Objective { cost_micros: 5_000_000, ..Objective::default() });
        plan.unplaced.push(crate::plan::Unplaced {
            inference_component_name: "ghost".into(),
            copy_count: 1,
            reasons: Vec::new(),
            causes: Vec::new(),
        });
        let found = verify(&problem, &plan);
        assert_eq!(found.len(), 3, "{found:#?}");
        for violation in &found {
            let text = violation.to_string();
            assert!(!text.contains('{') && !text.contains("placed_copies") && !text.contains("cost_micros"), "{text}");
        }
        assert_eq!(
            found[0].message,
            "reported objective (placed 2 copies, balance excess 0, instances none, cost 0.00 per hour) differs \
             from what the actions reach (placed 0 copies, balance excess 0, instances none, cost 0.00 per hour)"
        );
        assert!(found[2].message.starts_with("Unplaced names \"ghost\""), "{found:#?}");
    }
}
