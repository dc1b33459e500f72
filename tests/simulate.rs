//! The control-loop simulator (`fleetplan::simulate`, docs/simulate.md): the shipped scripts
//! tell their stories with every invariant holding, runs are deterministic, bad scripts get
//! exact messages with paths, random scripts never break an invariant, and repeated partial
//! execution converges to the objective of planning once.
#![cfg(feature = "json")]

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use fleetplan::simulate::{PlannerChoice, Script, Simulation, Simulator};
use fleetplan::{observe, CapacityLedger, Execution, LaunchFailure};
use fleetplan::{
    Action, CapacityEventKind, CapacityRecord, ComponentSpecification, ComputeResourceRequirements, Endpoint,
    ExactPlanner, Fleet, FleetCopy, FleetInstance, InferenceComponent, InstancePool, InstanceTypeSpec, Limits,
    ManagedInstanceScaling, Problem, RuntimeConfig, Scenario, ScenarioBuilder, SchedulingConfig, Status, StopReason,
};
use proptest::prelude::*;

fn script_text(name: &str) -> String {
    let path = format!("{}/scenarios/simulations/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn shipped(name: &str) -> Simulation {
    let script = Script::from_json(&script_text(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
    let simulation = Simulator::new().run(&script).unwrap_or_else(|error| panic!("{name}: {error}"));
    assert_eq!(simulation.failures, vec![], "{name}:\n{}", simulation.to_table());
    assert_eq!(simulation.stop_reason, StopReason::Completed, "{name}");
    assert_eq!(simulation.ticks.len(), script.ticks as usize, "{name}");
    simulation
}

/// (p1, p2) instances per tick.
fn tiers(simulation: &Simulation) -> Vec<(u32, u32)> {
    simulation.ticks.iter().map(|tick| (tick.instances_of_priority(1), tick.instances_of_priority(2))).collect()
}

fn has_event(simulation: &Simulation, tick: usize, event: &str) -> bool {
    simulation.ticks[tick].events.iter().any(|seen| seen == event)
}

#[test]
fn every_shipped_script_runs_with_every_invariant_holding() {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/simulations");
    let mut names: Vec<String> = std::fs::read_dir(directory)
        .expect("scenarios/simulations/")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "az-outage.json",
            "ice-fallback-recovery.json",
            "latency-blocked-then-lifted.json",
            "latency-outage-recovery.json",
            "scale-churn-consolidation.json"
        ]
    );
    for name in names {
        shipped(&name);
    }
}

#[test]
fn ice_on_priority_1_falls_back_then_rebalances_back_when_capacity_returns() {
    let simulation = shipped("ice-fallback-recovery.json");
    let tiers = tiers(&simulation);
    assert_eq!(tiers[0], (4, 0), "4 p5 at the start");
    assert_eq!(tiers[2], (0, 0), "scaled to zero");
    // Scale-out while p5 has no capacity: every launch fails, nothing runs yet.
    assert_eq!(tiers[4], (0, 0));
    assert_eq!(simulation.ticks[4].unplaced_copies, 4);
    assert!(has_event(&simulation, 4, "plan: 2 ml.p5.48xlarge in us-east-1a failed (InsufficientCapacity)"));
    // Next tick the errors block p5: fallback to g6, balanced.
    for (tick, record) in simulation.ticks.iter().enumerate().take(15).skip(5) {
        assert_eq!(tiers[tick], (0, 4), "tick {tick}: on the fallback during the ICE spell");
        assert_eq!((record.unplaced_copies, record.max_az_imbalance()), (0, 0), "tick {tick}");
    }
    // The rebalancer tries p5 whenever its error expired, and gives up make-before-break.
    for tick in [7, 11] {
        assert!(
            has_event(
                &simulation,
                tick,
                "rebalance: step 1 abandoned (InsufficientCapacity for ml.p5.48xlarge in us-east-1a)"
            ),
            "tick {tick}: {:?}",
            simulation.ticks[tick].events
        );
    }
    // Capacity is back at tick 12; the rebalance of tick 15 returns to p5 and releases the g6.
    assert!(has_event(&simulation, 15, "rebalance: 2 of 2 steps, launched 4, 4 moves, released 4"));
    for (tick, record) in simulation.ticks.iter().enumerate().skip(15) {
        assert_eq!(tiers[tick], (4, 0), "tick {tick}: back on priority 1");
        assert_eq!(record.cost_micros, 452_280_000, "tick {tick}");
    }
}

#[test]
fn ice_story_timeline_table() {
    insta::assert_snapshot!(shipped("ice-fallback-recovery.json").to_table());
}

#[test]
fn an_az_outage_loses_its_instances_falls_back_and_recovers() {
    let simulation = shipped("az-outage.json");
    let tiers = tiers(&simulation);
    assert_eq!(tiers[3], (6, 0));
    assert!(has_event(&simulation, 4, "outage: us-east-1c down, 2 instances and 3 copies lost"));
    assert_eq!((tiers[4], simulation.ticks[4].unplaced_copies), ((4, 0), 3));
    // Launches into the dead AZ fail; once they are blocked the copies go to the other two.
    assert!(has_event(&simulation, 5, "plan: 2 ml.g5.12xlarge in us-east-1c failed (InsufficientCapacity)"));
    assert_eq!(simulation.ticks[6].unplaced_copies, 0);
    assert_eq!(simulation.ticks[6].az_imbalance["embed"], 3);
    assert!(has_event(&simulation, 10, "outage: us-east-1c back"));
    // Scale-out after recovery: g6 in us-east-1c times out, g5 stands in, the rebalancer returns to g6.
    assert!(has_event(&simulation, 14, "plan: 2 ml.g6.12xlarge in us-east-1c failed (ProvisioningTimeout)"));
    assert_eq!(tiers[15], (4, 2));
    assert_eq!(simulation.ticks[15].max_az_imbalance(), 0);
    assert_eq!(tiers[19], (6, 0));
    assert_eq!(simulation.ticks[21].az_imbalance.values().copied().collect::<Vec<_>>(), vec![0, 0]);
}

#[test]
fn scale_churn_fragments_the_fleet_and_consolidation_packs_it() {
    let simulation = shipped("scale-churn-consolidation.json");
    let instances: Vec<u32> = simulation.ticks.iter().map(|tick| tick.instances).collect();
    assert_eq!(instances[8], 12, "chat scaled in, but code copies pin all 12 instances");
    assert_eq!(instances[9], 6);
    assert!(has_event(&simulation, 9, "consolidate: 3 steps, 6 moves, released 6"));
    assert_eq!(instances[16], 10);
    assert_eq!(instances[19], 6);
    assert!(has_event(&simulation, 19, "consolidate: 2 steps, 6 moves, released 4"));
    assert!(simulation.ticks.iter().all(|tick| tick.max_az_imbalance() <= 1 && tick.unplaced_copies == 0));
}

#[test]
fn a_draining_instance_keeps_serving_until_consolidation_empties_it() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .component("m", 2, 1, 1.0, 1_024)
        .fleet_instance("i-old", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-new", "ml.g6.12xlarge", "a", false)
        .fleet_copies("m", "i-old", 1)
        .fleet_copies("m", "i-new", 1)
        .draining("i-old")
        .build()
        .unwrap();
    let simulation =
        Simulator::new().run(&Script::new(scenario, 4).consolidate_every(2).scale(2, "m", 3)).expect("valid");
    assert_eq!(simulation.failures, vec![], "{}", simulation.to_table());
    let instances: Vec<u32> = simulation.ticks.iter().map(|tick| tick.instances).collect();
    assert_eq!(instances, [2, 1, 1, 1], "{}", simulation.to_table());
    assert!(has_event(&simulation, 1, "consolidate: 1 step, 1 move, released 1"), "{}", simulation.to_table());
    // The scale-out goes next to the copies, never onto the (released) draining instance.
    assert_eq!(simulation.ticks[2].placed_copies, 3);
}

#[test]
fn the_same_script_gives_byte_identical_output() {
    for name in ["ice-fallback-recovery.json", "az-outage.json", "scale-churn-consolidation.json"] {
        let (first, second) = (shipped(name), shipped(name));
        assert_eq!(first.to_json(), second.to_json(), "{name}");
        assert_eq!(first.to_table(), second.to_table(), "{name}");
        assert_eq!(first.to_svg(), second.to_svg(), "{name}");
    }
}

/// Tags balance, attributes are quoted, `&` only starts an entity: enough to catch an unescaped
/// name in the SVG.
fn assert_well_formed_xml(text: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let content = &rest[..start];
        for (index, _) in content.match_indices('&') {
            let entity = &content[index..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].iter().any(|known| entity.starts_with(known)),
                "bare & in {content:?}"
            );
        }
        let end = rest[start..].find('>').expect("tag closes") + start;
        let tag = &rest[start + 1..end];
        assert!(!tag.contains('<'), "< inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "closing {name}");
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap_or_default().to_string());
        }
        assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in {tag}");
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn the_svg_is_well_formed_and_escapes_names() {
    let svg = shipped("ice-fallback-recovery.json").to_svg();
    assert_well_formed_xml(&svg);
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(svg.matches("<polygon").count(), 2, "a band for p1 and one for p2");

    let mut scenario =
        ScenarioBuilder::new(["a"]).pool("ml.g6.12xlarge", 1).component("m", 1, 1, 1.0, 1_024).build().unwrap();
    scenario.endpoint.endpoint_name = "x<y & \"z\"\u{1b}".to_string();
    let simulation = Simulator::new().run(&Script::new(scenario, 2)).expect("valid");
    let svg = simulation.to_svg();
    assert_well_formed_xml(&svg);
    assert!(
        svg.contains("<title>x&lt;y &amp; &quot;z&quot;\\u{1b}: instances by priority tier per tick</title>"),
        "{svg}"
    );
}

fn errors(text: &str) -> String {
    match Script::from_json(text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(error) => error.to_string(),
    }
}

const SCENARIO: &str = r#"{"AvailabilityZones": ["a", "b"], "Endpoint": {"InstanceType": "ml.g6.12xlarge"},
  "InferenceComponents": [{"InferenceComponentName": "m", "Specification":
    {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}},
    "RuntimeConfig": {"CopyCount": 2}}]}"#;

/// Fuzz finding (simulate_script): the key "" was reported without a path.
#[test]
fn an_empty_key_is_named_by_a_quoted_path() {
    let text = format!(r#"{{"Scenario": {SCENARIO}, "Ticks": 2, "": 1}}"#);
    let known = "Scenario, Ticks, TickSeconds, Planner, ExactNodeLimit, ConsolidateEvery, RebalanceEvery, \
                 ConsolidateNodeLimit, RebalanceNodeLimit, LaunchTicks, CloudCapacity, ScaleEvents, LaunchFailures, AzOutages";
    assert_eq!(errors(&text), format!("\"\": unknown key; known keys: {known}"));
}

#[test]
fn bad_scripts_get_every_problem_with_its_path() {
    let text = format!(
        r#"{{"Scenario": {SCENARIO}, "Ticks": 10, "TickSecond": 5, "Planner": "magic",
        "CloudCapacity": [{{"Tick": 1.5, "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "a"}}],
        "ScaleEvents": [{{"Tick": 10, "InferenceComponentName": "nope", "CopyCount": 2000000}}],
        "LaunchFailures": [{{"FromTick": 1, "UntilTick": 11, "InstanceType": "ml.zz", "AvailabilityZone": "c",
                            "Error": "ProvisioningTimeout"}}],
        "AzOutages": [{{"FromTick": 3, "UntilTick": 3, "AvailabilityZone": "a"}},
                      {{"FromTick": 4, "UntilTick": 5, "AvailabilityZone": "a"}}]}}"#
    );
    assert_eq!(
        errors(&text),
        [
            "TickSecond: unknown key; did you mean TickSeconds?",
            "Planner: expected \"greedy\" or \"exact\", found \"magic\"",
            "CloudCapacity[0].Tick: expected a whole number ≥ 0, found 1.5",
            "ScaleEvents[0].Tick: 10 is not before Ticks (10)",
            "LaunchFailures[0].UntilTick: 11 is after Ticks (10)",
            "AzOutages[0].UntilTick: 3 is not after FromTick (3)",
            "ScaleEvents[0].CopyCount: 2000000 is more than 100000 (the scenario's limit)",
            "AzOutages[1].AvailabilityZone: \"a\" has an earlier outage; give one outage per AZ",
            "LaunchFailures[0].InstanceType: \"ml.zz\" is not in the scenario's catalogue",
            "LaunchFailures[0].AvailabilityZone: \"c\" is not one of the scenario's AvailabilityZones",
            "ScaleEvents[0].InferenceComponentName: \"nope\" is not a component of the scenario",
        ]
        .join("\n")
    );
}

#[test]
fn scenario_problems_are_reported_under_scenario() {
    let text = r#"{"Ticks": 0, "Scenario": {"AvailabilityZones": ["a"], "Now": 5,
        "Endpoint": {"InstanceType": "ml.g6.12xlarge", "DesiredInstanceCount": -1},
        "Fleet": {"Instances": [{"InstanceId": "i-1", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "a",
                                 "Reserved": false, "Reserved": true}]}},
        "ExactNodeLimit": 10}"#;
    assert_eq!(
        errors(text),
        [
            "Scenario.Fleet.Instances[0].Reserved: key given twice",
            "Scenario.Endpoint.DesiredInstanceCount: -1 is below the minimum 0",
            "Scenario.Now: the simulator keeps the clock (tick × TickSeconds); leave Now out",
            "ExactNodeLimit: only applies when Planner is \"exact\"",
            "Ticks: 0 is not between 1 and 100000",
        ]
        .join("\n")
    );
    assert_eq!(errors("[1]"), "expected an object, found [1]");
    assert_eq!(errors(r#"{"Ticks": 3}"#), "Scenario: is required");
    assert_eq!(
        errors(r#"{"Scenario": 7, "Ticks": "x"}"#),
        "Scenario: expected a scenario object, found 7\nTicks: expected a whole number, found \"x\""
    );
    assert!(errors("{").starts_with("malformed JSON: "), "{}", errors("{"));
}

#[test]
fn code_built_scripts_are_checked_like_json_ones() {
    let scenario =
        ScenarioBuilder::new(["a"]).pool("ml.g6.12xlarge", 1).component("m", 1, 1, 1.0, 1_024).build().unwrap();
    let script =
        Script::new(scenario, 200_000).tick_seconds(0).scale(5, "n", 1).planner(PlannerChoice::Exact { node_limit: 0 });
    let error = Simulator::new().run(&script).expect_err("invalid");
    assert_eq!(
        error.to_string(),
        [
            "Ticks: 200000 is not between 1 and 100000",
            "TickSeconds: 0 is not between 1 and 86400",
            "ExactNodeLimit: 0 is not between 1 and 10000000",
            "ScaleEvents[0].InferenceComponentName: \"n\" is not a component of the scenario",
        ]
        .join("\n")
    );
}

#[test]
fn limits_stop_the_run_between_ticks() {
    let script = Script::from_json(&script_text("ice-fallback-recovery.json")).expect("valid");
    let simulation = Simulator::new().limits(Limits::new().node_limit(5)).run(&script).expect("valid");
    assert_eq!((simulation.ticks.len(), simulation.stop_reason.clone()), (5, StopReason::NodeLimit));
    assert_eq!(simulation.ticks, shipped("ice-fallback-recovery.json").ticks[..5].to_vec());
    let cancelled = Arc::new(AtomicBool::new(true));
    let simulation = Simulator::new().limits(Limits::new().cancel_flag(cancelled)).run(&script).expect("valid");
    assert_eq!((simulation.ticks.len(), simulation.stop_reason), (0, StopReason::Cancelled));
}

/// A cancellation after the last tick stops the search for the summary's reference optimum (it
/// used to run to its node limit, seconds on a large scenario): the run says `Cancelled` and has
/// no optimum, and its ticks are those of the run without limits.
#[test]
fn a_cancellation_after_the_ticks_stops_the_reference_search() {
    let script = Script::from_json(&script_text("ice-fallback-recovery.json")).expect("valid");
    let full = shipped("ice-fallback-recovery.json");
    assert!(full.summary.optimum_placed_copies > 0);
    // One check per tick passes; every later check (the reference search's) asks to stop.
    let checks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ticks = script.ticks;
    let counter = Arc::clone(&checks);
    let limits = Limits::new().cancel_when(move || counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > ticks);
    let simulation = Simulator::new().limits(limits).run(&script).expect("valid");
    assert_eq!(simulation.stop_reason, StopReason::Cancelled);
    assert_eq!(simulation.ticks, full.ticks);
    assert_eq!((simulation.summary.optimum_placed_copies, simulation.summary.preferred_tick), (0, None));
    assert!(simulation.summary.optimum_by_priority.is_empty());
    assert!(checks.load(std::sync::atomic::Ordering::Relaxed) > ticks + 1, "the reference search never checked");
}

#[test]
fn the_exact_planner_runs_ticks_under_a_node_limit() {
    let mut script = Script::from_json(&script_text("ice-fallback-recovery.json")).expect("valid");
    script.planner = PlannerChoice::Exact { node_limit: 2_000 };
    let simulation = Simulator::new().run(&script).expect("valid");
    assert_eq!(simulation.failures, vec![], "{}", simulation.to_table());
    assert_eq!(simulation.planner, "exact");
    assert_eq!(tiers(&simulation)[10], (0, 4));
    assert_eq!(tiers(&simulation)[19], (4, 0));
    assert_eq!(simulation.to_json(), Simulator::new().run(&script).expect("valid").to_json());
}

#[test]
fn the_fake_cloud_never_hands_out_an_id_of_the_starting_fleet() {
    // Regression (defect 2): the starting fleet has i-00001, the first launch got i-00001 too.
    let scenario = ScenarioBuilder::new(["a", "b"])
        .pool("ml.g6.12xlarge", 1)
        .component("chat", 3, 4, 4.0, 16_384)
        .fleet_instance("i-00001", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-00003", "ml.g6.12xlarge", "b", false)
        .fleet_copies("chat", "i-00001", 1)
        .fleet_copies("chat", "i-00003", 1)
        .build()
        .expect("valid scenario");
    let script = Script::new(scenario, 3).scale(1, "chat", 4);
    let simulation = Simulator::new().run(&script).expect("valid");
    assert_eq!(simulation.failures, vec![], "{}", simulation.to_table());
    assert_eq!((simulation.ticks[1].instances, simulation.ticks[1].placed_copies), (4, 4));
    assert_eq!(simulation.stop_reason, StopReason::Completed);
}

#[test]
fn scale_events_beyond_the_scenario_limits_are_bad_input() {
    // Regression (defect 3): a count the scenario refuses was a broken invariant
    // (`InternalError`) at its tick instead of bad input.
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .component("chat", 1, 1, 1.0, 1_024)
        .component("code", 1, 1, 1.0, 1_024)
        .build()
        .expect("valid scenario");
    let error = Simulator::new().run(&Script::new(scenario.clone(), 3).scale(1, "chat", 200_000)).expect_err("bad");
    assert_eq!(error.to_string(), "ScaleEvents[0].CopyCount: 200000 is more than 100000 (the scenario's limit)");
    let script = Script::new(scenario, 3).scale(2, "code", 50_000).scale(1, "chat", 60_000);
    let error = Simulator::new().run(&script).expect_err("bad");
    assert_eq!(
        error.to_string(),
        "ScaleEvents[0].CopyCount: 50000 brings the copy counts to 110000 at tick 2; at most 100000 (the scenario's \
         limit)"
    );
}

#[test]
fn now_and_capacity_events_are_each_refused_without_demanding_the_other() {
    // Regression (defect 6): CapacityEvents demanded Now, and Now was then refused.
    let mut script: serde_json::Value = serde_json::from_str(&script_text("ice-fallback-recovery.json")).expect("JSON");
    script["Scenario"]["CapacityEvents"] = serde_json::json!([
        {"InstanceType": "ml.p5.48xlarge", "AvailabilityZone": "us-east-1a", "Event": "Launched", "Time": 0}
    ]);
    let events_given = "Scenario.CapacityEvents: the simulator records capacity events itself; script capacity with \
                        CloudCapacity, LaunchFailures and AzOutages";
    assert_eq!(errors(&script.to_string()), events_given);
    script["Scenario"]["Now"] = serde_json::json!(0);
    assert_eq!(
        errors(&script.to_string()),
        format!("Scenario.Now: the simulator keeps the clock (tick × TickSeconds); leave Now out\n{events_given}")
    );
    // Built in code: the same.
    let mut built = Script::from_json(&script_text("ice-fallback-recovery.json")).expect("valid");
    built
        .scenario
        .capacity_events
        .push(CapacityRecord::new("ml.p5.48xlarge", "us-east-1a", CapacityEventKind::Launched, 0).to_event());
    assert_eq!(Simulator::new().run(&built).expect_err("refused").to_string(), events_given);
}

#[test]
fn a_deadline_stops_the_run_and_the_result_says_so() {
    let script = Script::from_json(&script_text("ice-fallback-recovery.json")).expect("valid");
    let simulation =
        Simulator::new().limits(Limits::new().deadline(std::time::Instant::now())).run(&script).expect("valid");
    assert_eq!((simulation.ticks.len(), simulation.stop_reason.clone()), (0, StopReason::TimeLimit));
    assert!(simulation.to_table().contains("stopped after 0 ticks: time limit reached"), "{}", simulation.to_table());
}

/// A random script over a random small scenario: capacity changes, scale events, failure
/// windows and at most one outage, with consolidation and rebalancing on random schedules.
fn random_script() -> impl Strategy<Value = Script> {
    let ticks = 4u32..=12;
    (
        common::scenario(common::Config::SMALL),
        ticks,
        prop::collection::vec((0u32..12, 0usize..8, 0usize..4, prop::option::of(0u32..=3)), 0..6),
        prop::collection::vec((0u32..12, 0usize..4, 0u32..=8), 0..6),
        prop::collection::vec((0u32..12, 1u32..5, 0usize..8, 0usize..4, any::<bool>()), 0..3),
        prop::option::of((0u32..12, 1u32..5, 0usize..4)),
        (0u32..=4, 0u32..=4),
    )
        .prop_map(|(mut scenario, ticks, capacity, scales, failures, outage, (consolidate, rebalance))| {
            // The cloud decides capacity: the planner's own Capacity view stays unlimited.
            scenario.capacity.clear();
            let types: Vec<String> =
                scenario.endpoint.instance_pools.iter().map(|pool| pool.instance_type.clone()).collect();
            let azs = scenario.availability_zones.clone();
            let components: Vec<String> = scenario
                .inference_components
                .iter()
                .map(|component| component.inference_component_name.clone())
                .collect();
            let mut script = Script::new(scenario, ticks).consolidate_every(consolidate).rebalance_every(rebalance);
            for (tick, type_pick, az_pick, available) in capacity {
                script = script.cloud_capacity(
                    tick % ticks,
                    &types[type_pick % types.len()],
                    &azs[az_pick % azs.len()],
                    available,
                );
            }
            for (tick, component_pick, copies) in scales.into_iter().filter(|_| !components.is_empty()) {
                script = script.scale(tick % ticks, &components[component_pick % components.len()], copies);
            }
            for (from, length, type_pick, az_pick, timeout) in failures {
                let from = from % ticks;
                let failure =
                    if timeout { LaunchFailure::ProvisioningTimeout } else { LaunchFailure::InsufficientCapacity };
                script = script.launch_failure(
                    from,
                    (from + length).min(ticks),
                    &types[type_pick % types.len()],
                    &azs[az_pick % azs.len()],
                    failure,
                );
            }
            if let Some((from, length, az_pick)) = outage {
                let from = from % ticks;
                script = script.az_outage(from, (from + length).min(ticks).max(from + 1), &azs[az_pick % azs.len()]);
            }
            script
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random scripts never break an invariant, never panic, and replay byte for byte.
    #[test]
    fn random_scripts_keep_every_invariant(script in random_script()) {
        check_script(&script)?;
    }
}

/// Random scripts never break an invariant, never panic, and replay byte for byte.
fn check_script(script: &Script) -> Result<(), TestCaseError> {
    let simulation = Simulator::new().run(script).map_err(|error| TestCaseError::fail(format!("invalid: {error}")))?;
    prop_assert_eq!(&simulation.failures, &vec![], "{}", simulation.to_table());
    prop_assert_eq!(simulation.stop_reason.clone(), StopReason::Completed);
    prop_assert_eq!(simulation.ticks.len(), script.ticks as usize);
    let again = Simulator::new().run(script).map_err(|error| TestCaseError::fail(format!("invalid: {error}")))?;
    prop_assert_eq!(simulation.to_json(), again.to_json());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random text and random mutations of a shipped script: the reader answers, never panics.
    #[test]
    fn the_script_reader_never_panics(cut in 0usize..4_000, insert in "[\\[\\]{}\":,0-9a-zA-Z -]{0,8}") {
        let text = script_text("az-outage.json");
        let cut = (0..=cut.min(text.len())).rev().find(|&index| text.is_char_boundary(index)).unwrap_or(0);
        let mutated = format!("{}{insert}{}", &text[..cut], &text[cut..]);
        let _ = Script::from_json(&mutated);
        let _ = Script::from_json(&insert);
    }

    /// A plan executed partially, observed and re-planned — again and again, each round with
    /// new random failures, until a round goes through — reaches the objective of planning
    /// once. Exact planner (proven optimal rounds only), capacity unlimited, each round planned
    /// after the previous round's errors expired.
    #[test]
    fn repeated_partial_execution_converges_to_the_objective_of_planning_once(
        scenario in common::scenario(common::Config::SMALL),
        faults in prop::collection::vec(0usize..6, 1..24),
    ) {
        check_repeated_partial_execution(scenario, &faults)?;
    }
}

/// The property of `repeated_partial_execution_converges_to_the_objective_of_planning_once`.
fn check_repeated_partial_execution(scenario: Scenario, faults: &[usize]) -> Result<(), TestCaseError> {
    let mut scenario = scenario;
    scenario.capacity.clear();
    let exact = ExactPlanner::new().node_limit(20_000);
    let problem = Problem::new(&scenario).map_err(|e| TestCaseError::fail(format!("invalid: {e}")))?;
    let once = exact.plan(&problem);
    prop_assume!(once.status == Status::Optimal);

    let mut ledger = CapacityLedger::new();
    let mut now = 10_000;
    let mut fault = faults.iter().cycle();
    let mut current = scenario.clone();
    let mut problem = problem;
    let mut plan = once.clone();
    // Three faulty rounds at most; the fourth executes in full.
    for round in 0..4 {
        let faulty = round < 3;
        let mut execution = Execution::new(now);
        // Removals first: a real executor cannot place into room a failed removal kept
        // (plans may place onto room their own removals free), so every placement on an
        // instance with a failed removal fails too.
        let mut kept_room: Vec<&str> = Vec::new();
        for action in &plan.actions {
            if let Action::RemoveCopy { component, instance_id } = action {
                if faulty && fault.next() == Some(&4) {
                    execution = execution.removal_failed(component, instance_id);
                    kept_room.push(instance_id);
                }
            }
        }
        for action in &plan.actions {
            match action {
                Action::LaunchInstance { instance_id, .. } => {
                    execution = match (faulty, fault.next().copied().unwrap_or(5)) {
                        (true, 0) => execution.launch_failed(instance_id, LaunchFailure::InsufficientCapacity),
                        (true, 1) => execution.launch_failed(instance_id, LaunchFailure::ProvisioningTimeout),
                        (true, 2) => execution.launch_failed(instance_id, LaunchFailure::Other),
                        _ => execution.launched(instance_id, &format!("i-r{round}-{instance_id}")),
                    };
                }
                Action::PlaceCopy { component, instance_id, .. }
                    if kept_room.contains(&instance_id.as_str()) || (faulty && fault.next() == Some(&3)) =>
                {
                    execution = execution.placement_failed(component, instance_id);
                }
                _ => {}
            }
        }
        let observed =
            observe(&problem, &plan.actions, &execution).map_err(|e| TestCaseError::fail(format!("observe: {e}")))?;
        ledger.extend(observed.capacity_events.iter().cloned());
        current.fleet = observed.fleet;
        // Re-plan once the errors expired: capacity allows again.
        now += i64::from(ledger.ttl_seconds());
        ledger.apply(&mut current, now);
        problem = Problem::new(&current).map_err(|e| TestCaseError::fail(format!("observed fleet invalid: {e}")))?;
        prop_assert!(problem.capacity_blocks().is_empty());
        plan = exact.plan(&problem);
        prop_assert!(fleetplan::verify(&problem, &plan).is_empty(), "{:?}", fleetplan::verify(&problem, &plan));
        prop_assume!(plan.status == Status::Optimal);
    }
    prop_assert_eq!(plan.objective.key(), once.objective.key(), "\nonce: {}\nlast: {}", once.to_json(), plan.to_json());
    Ok(())
}

/// The cases the old strategy's regression file held (`simulate.proptest-regressions`): an
/// outage of the only AZ at tick 0 with MinInstanceCount 1, and repeated partial execution of
/// per-type and shared BINPACK components on a running fleet.
#[test]
fn former_failures_of_the_random_scripts() {
    let scenario = Scenario {
        availability_zones: vec!["zone-a".into()],
        instance_types: vec![InstanceTypeSpec {
            instance_type: "ml.test0.xlarge".into(),
            accelerator_count: 1,
            accelerator_memory_gib: 24.0,
            v_cpu_count: 8.0,
            memory_in_mb: 32768.0,
            hourly_price: None,
        }],
        capacity: vec![],
        endpoint: Endpoint {
            endpoint_name: "ep".into(),
            variant_name: "AllTraffic".into(),
            model_name: None,
            instance_type: None,
            instance_pools: vec![InstancePool {
                instance_type: "ml.test0.xlarge".into(),
                priority: 1,
                model_name_override: None,
            }],
            desired_instance_count: None,
            managed_instance_scaling: Some(ManagedInstanceScaling {
                status: Some(fleetplan::ScalingStatus::parse("ENABLED").expect("known")),
                min_instance_count: Some(1),
                max_instance_count: None,
                scale_in_policy: None,
            }),
        },
        inference_components: vec![InferenceComponent {
            inference_component_name: "ic-0".into(),
            specification: Some(ComponentSpecification {
                instance_type: None,
                model_name: None,
                compute_resource_requirements: ComputeResourceRequirements {
                    number_of_accelerator_devices_required: Some(0),
                    number_of_cpu_cores_required: None,
                    min_memory_required_in_mb: 128.0,
                },
                scheduling_config: Some(SchedulingConfig {
                    placement_strategy: Some(fleetplan::PlacementStrategy::parse("BINPACK").expect("known")),
                    availability_zone_balance: None,
                }),
            }),
            specifications: None,
            runtime_config: RuntimeConfig { copy_count: 0 },
        }],
        fleet: Fleet { instances: vec![], copies: vec![] },
        now: None,
        capacity_error_ttl_seconds: None,
        capacity_events: vec![],
    };
    check_script(&Script::new(scenario, 4).az_outage(0, 1, "zone-a")).unwrap();
    let scenario = Scenario {
        availability_zones: vec!["zone-a".into(), "zone-b".into()],
        instance_types: vec![InstanceTypeSpec {
            instance_type: "ml.test0.xlarge".into(),
            accelerator_count: 8,
            accelerator_memory_gib: 24.0,
            v_cpu_count: 96.0,
            memory_in_mb: 393216.0,
            hourly_price: None,
        }],
        capacity: vec![],
        endpoint: Endpoint {
            endpoint_name: "ep".into(),
            variant_name: "AllTraffic".into(),
            model_name: None,
            instance_type: None,
            instance_pools: vec![InstancePool {
                instance_type: "ml.test0.xlarge".into(),
                priority: 1,
                model_name_override: None,
            }],
            desired_instance_count: None,
            managed_instance_scaling: Some(ManagedInstanceScaling {
                status: Some(fleetplan::ScalingStatus::parse("ENABLED").expect("known")),
                min_instance_count: Some(0),
                max_instance_count: None,
                scale_in_policy: None,
            }),
        },
        inference_components: vec![
            InferenceComponent {
                inference_component_name: "ic-0".into(),
                specification: None,
                specifications: Some(vec![ComponentSpecification {
                    instance_type: Some("ml.test0.xlarge".into()),
                    model_name: None,
                    compute_resource_requirements: ComputeResourceRequirements {
                        number_of_accelerator_devices_required: Some(3),
                        number_of_cpu_cores_required: None,
                        min_memory_required_in_mb: 128.0,
                    },
                    scheduling_config: Some(SchedulingConfig {
                        placement_strategy: Some(fleetplan::PlacementStrategy::parse("BINPACK").expect("known")),
                        availability_zone_balance: None,
                    }),
                }]),
                runtime_config: RuntimeConfig { copy_count: 1 },
            },
            InferenceComponent {
                inference_component_name: "ic-1".into(),
                specification: Some(ComponentSpecification {
                    instance_type: None,
                    model_name: None,
                    compute_resource_requirements: ComputeResourceRequirements {
                        number_of_accelerator_devices_required: Some(1),
                        number_of_cpu_cores_required: None,
                        min_memory_required_in_mb: 128.0,
                    },
                    scheduling_config: Some(SchedulingConfig {
                        placement_strategy: Some(fleetplan::PlacementStrategy::parse("BINPACK").expect("known")),
                        availability_zone_balance: None,
                    }),
                }),
                specifications: None,
                runtime_config: RuntimeConfig { copy_count: 5 },
            },
        ],
        fleet: Fleet {
            instances: vec![
                FleetInstance {
                    instance_id: "i-0".into(),
                    instance_type: "ml.test0.xlarge".into(),
                    availability_zone: "zone-a".into(),
                    reserved: false,
                    state: None,
                },
                FleetInstance {
                    instance_id: "i-1".into(),
                    instance_type: "ml.test0.xlarge".into(),
                    availability_zone: "zone-a".into(),
                    reserved: false,
                    state: None,
                },
            ],
            copies: vec![
                FleetCopy { inference_component_name: "ic-0".into(), instance_id: "i-0".into(), copy_count: 2 },
                FleetCopy { inference_component_name: "ic-1".into(), instance_id: "i-1".into(), copy_count: 1 },
                FleetCopy { inference_component_name: "ic-1".into(), instance_id: "i-1".into(), copy_count: 1 },
            ],
        },
        now: None,
        capacity_error_ttl_seconds: None,
        capacity_events: vec![],
    };
    match check_repeated_partial_execution(
        scenario,
        &vec![1, 1, 2, 4, 1, 1, 3, 5, 1, 0, 0, 4, 2, 2, 5, 1, 4, 3, 5, 4, 5, 3, 5],
    ) {
        Ok(()) | Err(TestCaseError::Reject(_)) => {}
        Err(error) => panic!("{error}"),
    }
}

#[cfg(feature = "cli")]
mod cli {
    use std::process::Command;

    const BIN: &str = env!("CARGO_BIN_EXE_fleetplan");

    fn script_path(name: &str) -> String {
        format!("{}/scenarios/simulations/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn simulate_prints_the_table_json_and_svg() {
        let svg = std::env::temp_dir().join(format!("fleetplan-simulate-{}.svg", std::process::id()));
        let output = Command::new(BIN)
            .args(["simulate", &script_path("ice-fallback-recovery.json"), "--svg"])
            .arg(&svg)
            .output()
            .expect("runs");
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let table = String::from_utf8(output.stdout).expect("UTF-8");
        assert!(
            table.starts_with(
                "tick  time  p1  p2  p3  p4  p5  imbalance  cost (per hour)  unplaced  available  events\n"
            ),
            "{table}"
        );
        assert!(table.ends_with("\ninvariant checks passed: 20 ticks\n"), "{table}");
        let written = std::fs::read_to_string(&svg).expect("SVG written");
        let _ = std::fs::remove_file(&svg);
        assert!(written.starts_with("<svg ") && written.ends_with("</svg>\n"));

        let output =
            Command::new(BIN).args(["simulate", &script_path("az-outage.json"), "--json"]).output().expect("runs");
        assert_eq!(output.status.code(), Some(0));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert_eq!(json["Ticks"].as_array().map(Vec::len), Some(22));
        assert_eq!(json["Ticks"][4]["InstancesByPriority"], serde_json::json!({"1": 4}));
        assert_eq!(json["Ticks"][4]["UnplacedCopies"], 3);
        assert_eq!(json["Failures"], serde_json::json!([]));
        assert_eq!(json["StopReason"], "Completed");
        assert_eq!((&json["Ticks"][4]["DesiredCopies"], &json["Ticks"][4]["AvailableCopies"]), (&9.into(), &6.into()));
        let summary = &json["Summary"];
        assert_eq!((&summary["RecoveryTick"], &summary["TimeToPreferred"]), (&16.into(), &3.into()), "{summary}");
        assert_eq!(summary["CopyTicksLost"], 10, "{summary}");
    }

    #[test]
    fn simulate_takes_a_time_limit_and_says_when_it_stopped() {
        // A valid 100,000-tick script (minutes without a limit).
        let mut script: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(script_path("scale-churn-consolidation.json")).expect("shipped"),
        )
        .expect("JSON");
        script["Ticks"] = serde_json::json!(100_000);
        let path = std::env::temp_dir().join(format!("fleetplan-simulate-long-{}.json", std::process::id()));
        std::fs::write(&path, script.to_string()).expect("written");
        let output =
            Command::new(BIN).arg("simulate").arg(&path).args(["--time-limit-ms", "200"]).output().expect("runs");
        let _ = std::fs::remove_file(&path);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let table = String::from_utf8(output.stdout).expect("UTF-8");
        assert!(table.contains(" ticks: time limit reached\n"), "{table}");
    }

    #[test]
    fn simulate_names_a_scale_event_beyond_the_scenario_limit_with_exit_2() {
        let mut script: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(script_path("ice-fallback-recovery.json")).expect("shipped"))
                .expect("JSON");
        script["ScaleEvents"][0]["CopyCount"] = serde_json::json!(200_000);
        let output = Command::new(BIN)
            .args(["simulate", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(script.to_string().as_bytes())?;
                }
                child.wait_with_output()
            })
            .expect("runs");
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            "ScaleEvents[0].CopyCount: 200000 is more than 100000 (the scenario's limit)\n"
        );
    }

    #[test]
    fn simulate_rejects_a_bad_script_with_exit_2() {
        let output = Command::new(BIN)
            .args(["simulate", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(br#"{"Ticks": 3, "Scenari": {}}"#)?;
                }
                child.wait_with_output()
            })
            .expect("runs");
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            "Scenari: unknown key; did you mean Scenario?\nScenario: is required\n"
        );
        assert!(output.stdout.is_empty());
    }
}

/// One AZ, g6.12xlarge preferred and g5.12xlarge the fallback, one component of `copies`
/// four-accelerator copies (one per instance), no fleet.
fn latency_scenario(copies: u32) -> Scenario {
    ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .pool("ml.g5.12xlarge", 2)
        .component("m", copies, 4, 4.0, 16_384)
        .build()
        .unwrap()
}

fn pending(simulation: &Simulation) -> Vec<u32> {
    simulation.ticks.iter().map(|tick| tick.pending_instances).collect()
}

fn available(simulation: &Simulation) -> Vec<u64> {
    simulation.ticks.iter().map(|tick| tick.available_copies).collect()
}

fn run_clean(script: &Script) -> Simulation {
    let simulation = Simulator::new().run(script).expect("valid");
    assert_eq!(simulation.failures, vec![], "{}", simulation.to_table());
    simulation
}

#[test]
fn a_launch_is_pending_for_launch_ticks_then_in_service() {
    let simulation = run_clean(&Script::new(latency_scenario(2), 5).launch_ticks(2));
    assert_eq!(pending(&simulation), [2, 2, 0, 0, 0], "{}", simulation.to_table());
    assert_eq!(available(&simulation), [0, 0, 2, 2, 2]);
    // Pending instances are in the fleet (the planner does not launch them again).
    assert!(simulation.ticks.iter().all(|tick| tick.instances_of_priority(1) == 2));
    assert!(has_event(&simulation, 2, "launch: 2 ml.g6.12xlarge in a in service"), "{}", simulation.to_table());
    assert_eq!(simulation.summary.copy_ticks_lost, 4);
    assert_eq!(simulation.summary.launches, 2);
    // Without latency the copies serve from tick 0.
    let at_once = run_clean(&Script::new(latency_scenario(2), 5));
    assert_eq!((available(&at_once)[0], at_once.summary.copy_ticks_lost), (2, 0));
}

#[test]
fn a_provisioning_timeout_is_pending_then_fails_and_the_fallback_launches() {
    let script = Script::new(latency_scenario(1), 6).launch_ticks(2).launch_failure(
        0,
        1,
        "ml.g6.12xlarge",
        "a",
        LaunchFailure::ProvisioningTimeout,
    );
    let simulation = run_clean(&script);
    assert_eq!(tiers(&simulation)[..3], [(1, 0), (1, 0), (0, 1)], "{}", simulation.to_table());
    assert!(
        has_event(
            &simulation,
            2,
            "launch: 1 ml.g6.12xlarge in a failed after 2 ticks (ProvisioningTimeout), 1 copy lost"
        ),
        "{}",
        simulation.to_table()
    );
    // The error blocks g6 for the TTL (180 s = 3 ticks): the plan of tick 2 launches the g5,
    // Pending until tick 4.
    assert_eq!(pending(&simulation), [1, 1, 1, 1, 0, 0]);
    assert_eq!(available(&simulation), [0, 0, 0, 0, 1, 1]);
    assert_eq!(simulation.summary.copy_ticks_lost, 4);
    // An immediate failure (no latency) never shows as Pending.
    let at_once = run_clean(&Script::new(latency_scenario(1), 3).launch_failure(
        0,
        1,
        "ml.g6.12xlarge",
        "a",
        LaunchFailure::ProvisioningTimeout,
    ));
    assert!(
        has_event(&at_once, 0, "plan: 1 ml.g6.12xlarge in a failed (ProvisioningTimeout)"),
        "{}",
        at_once.to_table()
    );
}

#[test]
fn capacity_comes_back_when_an_outage_ends() {
    let mut scenario = latency_scenario(2);
    scenario.capacity_error_ttl_seconds = Some(60);
    let simulation = run_clean(&Script::new(scenario, 5).az_outage(1, 3, "a"));
    assert!(has_event(&simulation, 1, "outage: a down, 2 instances and 2 copies lost"), "{}", simulation.to_table());
    assert!(has_event(&simulation, 2, "plan: 2 ml.g6.12xlarge in a failed (InsufficientCapacity)"));
    assert!(has_event(&simulation, 3, "outage: a back"));
    assert!(has_event(&simulation, 3, "plan: launched 2 ml.g6.12xlarge in a"), "{}", simulation.to_table());
    assert_eq!(available(&simulation), [2, 0, 0, 2, 2]);
    let summary = &simulation.summary;
    assert_eq!((summary.recovery_tick, summary.preferred_tick, summary.time_to_preferred), (3, Some(3), Some(0)));
    assert_eq!(summary.copy_ticks_lost, 4);
}

/// Worked by hand in docs/simulate.md ("Convergence"): g6 has no capacity until tick 3, launches
/// take one tick, rebalancing every 2 ticks.
#[test]
fn time_to_preferred_and_copy_ticks_lost_on_a_small_script() {
    let script = Script::new(latency_scenario(2), 6)
        .launch_ticks(1)
        .rebalance_every(2)
        .cloud_capacity(0, "ml.g6.12xlarge", "a", Some(0))
        .cloud_capacity(3, "ml.g6.12xlarge", "a", None);
    let simulation = run_clean(&script);
    let table = simulation.to_table();
    // Tick 0: g6 fails (InsufficientCapacity); tick 1: two g5, Pending; tick 2: they serve.
    assert!(has_event(&simulation, 0, "plan: 2 ml.g6.12xlarge in a failed (InsufficientCapacity)"), "{table}");
    assert_eq!(tiers(&simulation), [(0, 0), (0, 2), (0, 2), (2, 0), (2, 0), (2, 0)], "{table}");
    // Tick 3: capacity is back, the rebalance launches two g6 and moves the copies; the g5
    // serve them (and cost) until the g6 are InService at tick 4.
    assert_eq!(pending(&simulation), [0, 2, 0, 2, 0, 0], "{table}");
    assert_eq!(available(&simulation), [0, 0, 2, 2, 2, 2], "{table}");
    assert!(simulation.ticks[3].cost_micros > simulation.ticks[4].cost_micros, "{table}");
    let summary = &simulation.summary;
    assert_eq!(summary.optimum_by_priority, [(1, 2)].into_iter().collect(), "{table}");
    assert_eq!((summary.recovery_tick, summary.preferred_tick, summary.time_to_preferred), (3, Some(4), Some(1)));
    assert_eq!((summary.copy_ticks_lost, summary.moves, summary.launches), (4, 2, 4), "{table}");
    // Passive (no rebalancing): nothing scales, so the g5 stay.
    let passive = run_clean(&Script { rebalance_every: 0, ..script });
    assert_eq!(passive.summary.time_to_preferred, None, "{}", passive.to_table());
}

fn latency_script() -> impl Strategy<Value = Script> {
    (random_script(), 0u32..=3).prop_map(|(script, launch_ticks)| script.launch_ticks(launch_ticks))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// With launch latency too, the same script gives the same report (every tick, the
    /// summary), and no invariant breaks.
    #[test]
    fn the_simulation_is_deterministic(script in latency_script()) {
        check_script(&script)?;
        let (first, second) = (Simulator::new().run(&script), Simulator::new().run(&script));
        prop_assert_eq!(first, second);
    }
}

#[test]
fn launch_ticks_are_checked_with_field_and_value() {
    let with = |value: &str| {
        let mut script: serde_json::Value = serde_json::from_str(&script_text("ice-fallback-recovery.json")).unwrap();
        script["LaunchTicks"] = serde_json::from_str(value).unwrap();
        script.to_string()
    };
    assert_eq!(errors(&with("1001")), "LaunchTicks: 1001 is more than 1000");
    assert_eq!(errors(&with("1.5")), "LaunchTicks: expected a whole number ≥ 0, found 1.5");
    assert_eq!(errors(&with("\"2\"")), "LaunchTicks: expected a whole number, found \"2\"");
    assert!(Script::from_json(&with("3")).is_ok_and(|script| script.launch_ticks == 3));
    let mut script = Script::from_json(&script_text("ice-fallback-recovery.json")).unwrap();
    script.launch_ticks = 5_000;
    assert_eq!(script.validate().map(|_| ()).unwrap_err().to_string(), "LaunchTicks: 5000 is more than 1000");
}
