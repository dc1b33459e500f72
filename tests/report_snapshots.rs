//! Snapshots of the reliability report (table, SVG, JSON) for bundled scenarios, for their
//! current fleet and for a fleet after a hand-built plan.

use crate::common;

use fleetplan::__internal::unplaced;
use fleetplan::{
    objective, verify, Action, FinalFleet, Plan, Problem, ReliabilityReport, SolverKind, Status, StopReason,
};

fn launch(id: &str, instance_type: &str, az: &str) -> Action {
    Action::LaunchInstance {
        instance_id: id.into(),
        instance_type: instance_type.into(),
        availability_zone: az.into(),
        reserved: false,
    }
}

fn place(component: &str, id: &str) -> Action {
    Action::PlaceCopy { component: component.into(), instance_id: id.into(), model_name: None }
}

/// A plan built from actions the way engines do: objective and Unplaced from the shared code.
fn plan_of(problem: &Problem, actions: Vec<Action>) -> Plan {
    let (fleet, violations) = FinalFleet::apply(problem, &actions);
    assert!(violations.is_empty(), "{violations:?}");
    Plan {
        solver: SolverKind::Greedy,
        status: Status::Feasible,
        stop_reason: StopReason::Completed,
        objective: objective(problem, &fleet),
        unplaced: unplaced(problem, &fleet),
        actions,
        bound: None,
        warnings: problem.warnings().to_vec(),
        omitted: Default::default(),
    }
}

/// seed-az-balance placed by hand: two g6e (priority 1), one g6 (priority 2) in us-east-1a.
fn seed_az_balance_plan(problem: &Problem) -> Plan {
    let plan = plan_of(
        problem,
        vec![
            launch("new-1", "ml.g6e.12xlarge", "us-east-1a"),
            launch("new-2", "ml.g6e.12xlarge", "us-east-1b"),
            launch("new-3", "ml.g6.12xlarge", "us-east-1a"),
            place("agent-planner", "new-1"),
            place("agent-summarizer", "new-1"),
            place("agent-planner", "new-2"),
            place("agent-planner", "new-2"),
            place("agent-router", "new-2"),
            place("agent-planner", "new-3"),
            place("agent-router", "new-3"),
        ],
    );
    let violations = verify(problem, &plan);
    assert!(violations.is_empty(), "{violations:?}");
    plan
}

#[test]
fn seed_az_balance_current_fleet() {
    let problem = common::bundled_problem("seed-az-balance.json");
    let report = ReliabilityReport::build(&problem);
    assert_eq!(report.instance_count, 0);
    insta::assert_snapshot!("seed_az_balance_table", report.to_table());
    insta::assert_snapshot!("seed_az_balance_svg", report.to_svg());
    insta::assert_snapshot!("seed_az_balance_json", report.to_json());
}

#[test]
fn seed_az_balance_after_a_plan() {
    let problem = common::bundled_problem("seed-az-balance.json");
    let plan = seed_az_balance_plan(&problem);
    let report = ReliabilityReport::for_plan(&problem, &plan);
    // Numbers worked out by hand from the actions above.
    let copies: Vec<(&str, &[u64])> =
        report.components.iter().map(|c| (c.inference_component_name.as_str(), c.copies_per_az.as_slice())).collect();
    assert_eq!(
        copies,
        [("agent-planner", &[2u64, 2][..]), ("agent-router", &[1, 1][..]), ("agent-summarizer", &[1, 0][..])]
    );
    let planner = &report.components[0];
    assert_eq!((planner.copies_left_after_az_loss, planner.copies_left_after_instance_loss), (2, 2));
    assert_eq!(planner.worst_instance.as_deref(), Some("new-2"));
    assert_eq!(report.components[2].balance_excess, 1); // CopyCount 1 under MaxImbalance 0
    assert_eq!(report.instances_per_az, [2, 1]);
    // 2 × 10.49 + 4.60
    assert!((report.cost_per_hour - 25.58).abs() < 1e-9);
    assert_eq!(report.cost_per_hour, plan.objective.cost());
    insta::assert_snapshot!("seed_az_balance_plan_table", report.to_table());
    insta::assert_snapshot!("seed_az_balance_plan_svg", report.to_svg());
}

#[test]
fn fragmented_fleet_current_fleet() {
    let problem = common::bundled_problem("fragmented-fleet.json");
    let report = ReliabilityReport::build(&problem);
    assert_eq!(report.instance_count, 26);
    insta::assert_snapshot!("fragmented_fleet_table", report.to_table());
    insta::assert_snapshot!("fragmented_fleet_svg", report.to_svg());
}

#[test]
fn every_bundled_scenario_reports_deterministically() {
    for (name, text) in common::bundled_scenarios() {
        let problem = Problem::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let first = ReliabilityReport::build(&problem);
        let second = ReliabilityReport::build(&problem);
        assert_eq!(first.to_table(), second.to_table(), "{name}");
        assert_eq!(first.to_svg(), second.to_svg(), "{name}");
        assert_eq!(first.to_json(), second.to_json(), "{name}");
        // Every component has one row and one SVG row; every AZ a column.
        assert_eq!(first.components.len(), problem.components().len(), "{name}");
        let svg = first.to_svg();
        assert_eq!(svg.matches("<rect").count(), problem.components().len() * (problem.azs().len() + 1), "{name}");
        // Copies left after losing an AZ or an instance never exceed what is placed.
        for component in &first.components {
            assert!(component.copies_left_after_az_loss <= component.placed, "{name}");
            assert!(component.copies_left_after_instance_loss <= component.placed, "{name}");
            assert_eq!(component.copies_per_az.iter().sum::<u64>(), component.placed, "{name}");
        }
    }
}

#[test]
fn seed_multi_gpu_llm_partial_plan_explained() {
    let problem = common::bundled_problem("seed-multi-gpu-llm.json");
    let mut reserved = launch("new-1", "ml.p5.48xlarge", "us-east-1c");
    if let Action::LaunchInstance { reserved: flag, .. } = &mut reserved {
        *flag = true;
    }
    let mut actions = vec![reserved, launch("new-2", "ml.p5.48xlarge", "us-east-1a")];
    actions.extend(["new-1", "new-1", "new-2"].map(|id| place("llama-70b", id)));
    actions.extend(["new-2", "new-2", "new-2"].map(|id| place("embedder", id)));
    let plan = plan_of(&problem, actions);
    assert!(verify(&problem, &plan).is_empty());
    // llama-70b: 3 of 6 placed; embedder complete.
    assert_eq!(plan.unplaced.len(), 1);
    assert_eq!(plan.unplaced[0].copy_count, 3);
    let mut text = String::new();
    for entry in &plan.unplaced {
        text.push_str(&format!("{} ({} copies)\n", entry.inference_component_name, entry.copy_count));
        for reason in &entry.reasons {
            text.push_str(&format!("  - {reason}\n"));
        }
    }
    insta::assert_snapshot!("seed_multi_gpu_llm_partial_unplaced", text);
    insta::assert_snapshot!(
        "seed_multi_gpu_llm_partial_table",
        ReliabilityReport::for_plan(&problem, &plan).to_table()
    );
}

/// Component, AZ, endpoint and instance names with XML specials and control characters.
const MARKUP_NAMES: &str = r#"{
  "AvailabilityZones": ["az<1>", "az&2"],
  "Endpoint": {"EndpointName": "ep \"quoted\" & 'single'", "VariantName": "v\u0001",
               "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
  "InferenceComponents": [
    {"InferenceComponentName": "<script>&amp;\"x\"", "RuntimeConfig": {"CopyCount": 3},
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024},
       "SchedulingConfig": {"AvailabilityZoneBalance": {"MaxImbalance": 1}}}},
    {"InferenceComponentName": "esc\u001b[31m\ttab\nline\uFFFF", "RuntimeConfig": {"CopyCount": 1},
     "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}}}
  ],
  "Fleet": {"Instances": [{"InstanceId": "i<1>", "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "az<1>"}],
            "Copies": [{"InferenceComponentName": "<script>&amp;\"x\"", "InstanceId": "i<1>", "CopyCount": 2}]}
}"#;

/// Whether `ch` may appear in an XML 1.0 document at all.
fn xml_char(ch: char) -> bool {
    matches!(ch, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// Checks that every `&` in `text` starts one of XML's predefined or numeric references.
fn check_references(text: &str) -> Result<(), String> {
    for (at, _) in text.match_indices('&') {
        let rest = &text[at + 1..];
        let name = rest.split(';').next().unwrap_or("");
        let numeric = name
            .strip_prefix("#x")
            .map(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
            .or_else(|| name.strip_prefix('#').map(|dec| !dec.is_empty() && dec.chars().all(|c| c.is_ascii_digit())));
        let predefined = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos");
        if !rest.contains(';') || !(predefined || numeric == Some(true)) {
            return Err(format!("bad reference at {at}: {:?}", &text[at..(at + 12).min(text.len())]));
        }
    }
    Ok(())
}

/// A strict well-formedness check, enough for the SVG the report writes: only XML 1.0
/// characters; tags with quoted attributes that hold no `<` and only valid references; text with
/// no `<` outside tags and only valid references; every start tag closed in order; one root.
fn check_well_formed(xml: &str) -> Result<(), String> {
    if let Some(bad) = xml.chars().find(|&ch| !xml_char(ch)) {
        return Err(format!("character {bad:?} is not allowed in XML 1.0"));
    }
    let mut open: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        let (text, tag_and_more) = rest.split_at(start);
        check_references(text)?;
        if open.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        // The tag ends at the first `>` outside a quoted attribute value.
        let mut quote = None;
        let end = tag_and_more
            .char_indices()
            .find(|&(_, ch)| match quote {
                Some(q) if ch == q => {
                    quote = None;
                    false
                }
                Some(_) => false,
                None if ch == '"' || ch == '\'' => {
                    quote = Some(ch);
                    false
                }
                None => ch == '>',
            })
            .map(|(index, _)| index)
            .ok_or_else(|| format!("unterminated tag: {tag_and_more:?}"))?;
        let tag = &tag_and_more[1..end];
        rest = &tag_and_more[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(expected) if expected == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name = body.split_whitespace().next().unwrap_or("");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':') {
            return Err(format!("bad tag name in <{tag}>"));
        }
        // Attributes: name="value" pairs; values hold no `<` and only valid references.
        let mut attributes = body[name.len()..].trim();
        while !attributes.is_empty() {
            let (attribute, after) =
                attributes.split_once('=').ok_or_else(|| format!("attribute without value in <{tag}>"))?;
            let quote = after
                .chars()
                .next()
                .filter(|&q| q == '"' || q == '\'')
                .ok_or_else(|| format!("unquoted attribute {attribute} in <{tag}>"))?;
            let value_and_more = &after[1..];
            let close = value_and_more.find(quote).ok_or_else(|| format!("unterminated attribute in <{tag}>"))?;
            let value = &value_and_more[..close];
            if value.contains('<') {
                return Err(format!("`<` in attribute {attribute} of <{tag}>"));
            }
            check_references(value)?;
            attributes = value_and_more[close + 1..].trim_start();
        }
        if open.is_empty() {
            roots += 1;
        }
        if !self_closing {
            open.push(name);
        }
    }
    if !rest.trim().is_empty() {
        return Err(format!("text after the root: {rest:?}"));
    }
    match (open.as_slice(), roots) {
        ([], 1) => Ok(()),
        (unclosed, roots) => Err(format!("unclosed {unclosed:?}, {roots} roots")),
    }
}

#[test]
fn the_well_formedness_check_rejects_broken_xml() {
    assert_eq!(check_well_formed("<svg><text>a &amp; b</text></svg>"), Ok(()));
    for broken in [
        "<svg><text>a & b</text></svg>",
        "<svg><text>a < b</text></svg>",
        "<svg><text title=\"a\"b\">x</text></svg>",
        "<svg><text>x</svg>",
        "<svg><text>\u{1b}</text></svg>",
        "<svg/><svg/>",
    ] {
        assert!(check_well_formed(broken).is_err(), "{broken}");
    }
}

#[test]
fn svg_with_markup_and_control_characters_in_names_is_well_formed() {
    let problem = Problem::from_json(MARKUP_NAMES).unwrap();
    let plan = fleetplan::plan_greedy(&problem);
    for report in [ReliabilityReport::build(&problem), ReliabilityReport::for_plan(&problem, &plan)] {
        let svg = report.to_svg();
        assert_eq!(check_well_formed(&svg), Ok(()), "{svg}");
        assert!(svg.contains(">&lt;script&gt;&amp;amp;&quot;x&quot;</text>"), "{svg}");
        assert!(svg.contains(">esc\\u{1b}[31m\\ttab\\nline\\u{ffff}</text>"), "{svg}");
        assert!(svg.contains("<title>Copies per AZ: ep &quot;quoted&quot; &amp; &apos;single&apos; / v\\u{1}</title>"));
    }
    let report = ReliabilityReport::for_plan(&problem, &plan);
    insta::assert_snapshot!("markup_names_plan_svg", report.to_svg());
    let table = report.to_table();
    assert!(!table.chars().any(|ch| ch.is_control() && ch != '\n'), "{table}");
    insta::assert_snapshot!("markup_names_plan_table", table);
}
