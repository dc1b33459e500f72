//! The reliability report: copies per AZ, blast radius, fleet composition, cost.
//!
//! [`ReliabilityReport::build`] reports on the problem's current fleet;
//! [`ReliabilityReport::for_plan`] on the fleet a plan leads to. The report is plain data
//! (serialised with PascalCase keys) with two renderings: [`ReliabilityReport::to_table`] and an
//! SVG heat map of components × AZs, [`ReliabilityReport::to_svg`].
//!
//! Blast radius is the worst case: "copies left after losing one AZ" is the placed copies minus
//! the copies in the AZ holding the most of them; "after losing one instance" likewise for the
//! instance holding the most.
//!
//! ```
//! use fleetplan::{Problem, ReliabilityReport, ScenarioBuilder};
//!
//! let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
//!     .pool("ml.g6.12xlarge", 1)
//!     .component("chat", 3, 1, 4.0, 16_384)
//!     .max_imbalance("chat", 1)
//!     .fleet_instance("i-1", "ml.g6.12xlarge", "us-east-1a", false)
//!     .fleet_instance("i-2", "ml.g6.12xlarge", "us-east-1b", false)
//!     .fleet_copies("chat", "i-1", 2)
//!     .fleet_copies("chat", "i-2", 1)
//!     .build().unwrap();
//! let problem = Problem::new(&scenario).unwrap();
//! let report = ReliabilityReport::build(&problem);
//! let chat = &report.components[0];
//! assert_eq!(chat.copies_per_az, vec![2, 1]);
//! assert_eq!(chat.copies_left_after_az_loss, 1);
//! assert_eq!(chat.copies_left_after_instance_loss, 1);
//! assert!(report.to_table().contains("chat"));
//! assert!(report.to_svg().starts_with("<svg"));
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::fleet::{balance_excess, imbalance, objective, FinalFleet};
use crate::plan::Plan;
use crate::problem::{PlacementStrategy, Problem};
use crate::text::{escape_text, plural, shorten, Align, Table};

/// The SVG's escaping helper, also reachable from here for existing callers.
pub use crate::render::escape_xml;

/// Something about a component's placement that a person should look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ReliabilityWarning {
    /// All placed copies are in one AZ: losing it takes the component down.
    SingleAz,
    /// `CopyCount` is 1: always single-AZ, must be flagged for production.
    SingleCopy,
    /// Fewer copies placed than desired.
    Unplaced,
    /// The AZ imbalance is above `MaxImbalance`.
    ImbalanceExceeded,
    /// All placed copies run on one instance.
    SingleInstance,
}

impl ReliabilityWarning {
    /// Short label used in the table.
    pub fn label(self) -> &'static str {
        match self {
            ReliabilityWarning::SingleAz => "single-AZ",
            ReliabilityWarning::SingleCopy => "CopyCount-1",
            ReliabilityWarning::Unplaced => "unplaced",
            ReliabilityWarning::ImbalanceExceeded => "imbalance>max",
            ReliabilityWarning::SingleInstance => "single-instance",
        }
    }
}

/// The reliability view of one component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ComponentReliability {
    /// Component name.
    pub inference_component_name: String,
    /// `SPREAD` or `BINPACK`.
    pub placement_strategy: String,
    /// Desired copies.
    pub copy_count: u64,
    /// Copies in the fleet.
    pub placed: u64,
    /// Copies per AZ, aligned with [`ReliabilityReport::availability_zones`].
    pub copies_per_az: Vec<u64>,
    /// Most minus fewest copies over all AZs (an AZ without copies counts as 0).
    pub imbalance: u64,
    /// `MaxImbalance`, when the component has AZ balance.
    pub max_imbalance: Option<u32>,
    /// `max(0, imbalance − MaxImbalance)` (0 without AZ balance).
    pub balance_excess: u64,
    /// Instances holding at least one copy.
    pub instances: u64,
    /// Copies left after losing the AZ holding the most copies.
    pub copies_left_after_az_loss: u64,
    /// That AZ (first in AZ order on ties); `None` without copies.
    pub worst_az: Option<String>,
    /// Copies left after losing the instance holding the most copies.
    pub copies_left_after_instance_loss: u64,
    /// That instance (first in fleet order on ties); `None` without copies.
    pub worst_instance: Option<String>,
    /// Warnings, in a fixed order.
    pub warnings: Vec<ReliabilityWarning>,
}

/// Instances of one type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TypeComposition {
    /// Instance type.
    pub instance_type: String,
    /// Pool priority (6 = not in the pool).
    pub priority: u8,
    /// Instances per AZ, aligned with [`ReliabilityReport::availability_zones`].
    pub instances_per_az: Vec<u64>,
    /// All instances of this type.
    pub instances: u64,
    /// Of which in a reservation (cost nothing).
    pub reserved: u64,
    /// Of which draining (contract §6: they get no new copies and are released first); in the
    /// JSON only when some are.
    #[serde(skip_serializing_if = "is_zero")]
    pub draining: u64,
    /// Hourly price of one instance, if known.
    pub hourly_price: Option<f64>,
}

/// The reliability report of one fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReliabilityReport {
    /// Endpoint name.
    pub endpoint_name: String,
    /// Variant name.
    pub variant_name: String,
    /// The endpoint's AZs, in input order; every per-AZ vector is aligned with it.
    pub availability_zones: Vec<String>,
    /// Per component, in input order.
    pub components: Vec<ComponentReliability>,
    /// Per instance type that has instances, by priority then type order.
    pub instance_types: Vec<TypeComposition>,
    /// Instances per AZ.
    pub instances_per_az: Vec<u64>,
    /// Instances per priority (1–6), zero entries omitted.
    pub instances_by_priority: BTreeMap<u8, u32>,
    /// All instances.
    pub instance_count: u64,
    /// Hourly cost from the shared objective (reserved instances cost 0).
    pub cost_per_hour: f64,
    /// True when some type lacks `HourlyPrice`, so the cost counts instances, not dollars.
    pub cost_in_instance_units: bool,
}

impl ReliabilityReport {
    /// Builds the report for the problem's current fleet.
    pub fn build(problem: &Problem) -> ReliabilityReport {
        let (fleet, _) = FinalFleet::apply(problem, &[]);
        ReliabilityReport::for_fleet(problem, &fleet)
    }

    /// Builds the report for the fleet after a plan's actions (structural problems in the
    /// actions are ignored here; `verify` reports them).
    pub fn for_plan(problem: &Problem, plan: &Plan) -> ReliabilityReport {
        let (fleet, _) = FinalFleet::apply(problem, &plan.actions);
        ReliabilityReport::for_fleet(problem, &fleet)
    }

    /// Builds the report for any final fleet.
    pub fn for_fleet(problem: &Problem, fleet: &FinalFleet) -> ReliabilityReport {
        let zones = problem.azs.len();
        let per_az = fleet.copies_per_az(problem);
        let components = problem
            .components
            .iter()
            .enumerate()
            .zip(per_az)
            .map(|((index, component), copies_per_az)| {
                component_reliability(problem, fleet, index, component, copies_per_az)
            })
            .collect();

        let mut by_type: BTreeMap<(u8, usize), TypeComposition> = BTreeMap::new();
        let mut instances_per_az = vec![0u64; zones];
        for instance in &fleet.instances {
            let Some(info) = problem.types.get(instance.type_index) else {
                continue;
            };
            let entry = by_type.entry((info.priority, instance.type_index)).or_insert_with(|| TypeComposition {
                instance_type: info.name.clone(),
                priority: info.priority,
                instances_per_az: vec![0; zones],
                instances: 0,
                reserved: 0,
                draining: 0,
                hourly_price: info.hourly_price,
            });
            if let Some(slot) = entry.instances_per_az.get_mut(instance.az_index) {
                *slot += 1;
            }
            if let Some(slot) = instances_per_az.get_mut(instance.az_index) {
                *slot += 1;
            }
            entry.instances += 1;
            entry.reserved += u64::from(instance.reserved);
            let draining =
                instance.existing.and_then(|i| problem.fleet.get(i)).is_some_and(|existing| existing.draining);
            entry.draining += u64::from(draining);
        }
        let objective = objective(problem, fleet);
        let cost_in_instance_units = fleet
            .instances
            .iter()
            .any(|instance| problem.types.get(instance.type_index).is_some_and(|info| info.hourly_price.is_none()));
        ReliabilityReport {
            endpoint_name: problem.endpoint_name.clone(),
            variant_name: problem.variant_name.clone(),
            availability_zones: problem.azs.clone(),
            components,
            instance_types: by_type.into_values().collect(),
            instances_per_az,
            instances_by_priority: objective.instances_by_priority.clone(),
            instance_count: fleet.instances.len() as u64,
            cost_per_hour: objective.cost(),
            cost_in_instance_units,
        }
    }

    /// Components with at least one warning.
    pub fn components_with_warnings(&self) -> impl Iterator<Item = &ComponentReliability> {
        self.components.iter().filter(|component| !component.warnings.is_empty())
    }

    /// The report as pretty JSON (PascalCase keys, deterministic).
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// A readable table: per component copies per AZ, balance, blast radius and warnings;
    /// then the fleet composition per type and AZ, per priority, and the hourly cost.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let cost = if self.cost_in_instance_units {
            format!("{:.2} instance-units/h (a type lacks HourlyPrice)", self.cost_per_hour)
        } else {
            format!("${:.2}/h", self.cost_per_hour)
        };
        let _ = writeln!(
            out,
            "Endpoint {} / {}: {} instance{} over {} AZ{}, {cost}",
            escape_text(&self.endpoint_name),
            escape_text(&self.variant_name),
            self.instance_count,
            plural(self.instance_count),
            self.availability_zones.len(),
            plural(self.availability_zones.len() as u64),
        );
        out.push('\n');

        let mut header = vec!["Component".to_string(), "Copies".to_string()];
        header.extend(self.availability_zones.iter().cloned());
        header.extend(
            ["Imbalance", "Max", "Instances", "AfterAzLoss", "AfterInstanceLoss", "Warnings"].map(String::from),
        );
        let rows: Vec<Vec<String>> = self
            .components
            .iter()
            .map(|c| {
                let mut row = vec![c.inference_component_name.clone(), format!("{}/{}", c.placed, c.copy_count)];
                row.extend(c.copies_per_az.iter().map(u64::to_string));
                row.push(c.imbalance.to_string());
                row.push(c.max_imbalance.map_or("-".to_string(), |m| m.to_string()));
                row.push(c.instances.to_string());
                row.push(c.copies_left_after_az_loss.to_string());
                row.push(c.copies_left_after_instance_loss.to_string());
                let labels: Vec<&str> = c.warnings.iter().map(|w| w.label()).collect();
                row.push(if labels.is_empty() { "-".to_string() } else { labels.join(",") });
                row
            })
            .collect();
        write_table(&mut out, &header, rows, 1);
        out.push('\n');

        let mut header = vec!["InstanceType".to_string(), "Priority".to_string()];
        header.extend(self.availability_zones.iter().cloned());
        header.extend(["Total", "Reserved", "Price/h"].map(String::from));
        let mut rows: Vec<Vec<String>> = self
            .instance_types
            .iter()
            .map(|t| {
                let mut row = vec![t.instance_type.clone(), t.priority.to_string()];
                row.extend(t.instances_per_az.iter().map(u64::to_string));
                row.push(t.instances.to_string());
                row.push(t.reserved.to_string());
                row.push(t.hourly_price.map_or("-".to_string(), |p| format!("{p:.2}")));
                row
            })
            .collect();
        let mut total = vec!["Total".to_string(), String::new()];
        total.extend(self.instances_per_az.iter().map(u64::to_string));
        total.push(self.instance_count.to_string());
        total.push(self.instance_types.iter().map(|t| t.reserved).sum::<u64>().to_string());
        total.push(String::new());
        rows.push(total);
        write_table(&mut out, &header, rows, 2);

        let draining: Vec<String> = self
            .instance_types
            .iter()
            .filter(|t| t.draining > 0)
            .map(|t| format!("{} {}", t.draining, escape_text(&t.instance_type)))
            .collect();
        if !draining.is_empty() {
            let _ = writeln!(out, "\nDraining (no new copies, released first): {}", draining.join(", "));
        }
        let priorities: Vec<String> =
            self.instances_by_priority.iter().map(|(priority, count)| format!("P{priority}: {count}")).collect();
        let _ = writeln!(
            out,
            "\nInstances by priority: {}",
            if priorities.is_empty() { "none".to_string() } else { priorities.join(", ") }
        );
        out
    }

    /// An SVG heat map, components (rows) × AZs (columns). Each cell shows the copies in that AZ
    /// and their share; its colour runs from red (no copies) through yellow to green (at least
    /// an even share, placed / AZs). Grey rows have no copies. A last column shows the imbalance
    /// against `MaxImbalance`, red when exceeded. Deterministic; names are XML-escaped.
    pub fn to_svg(&self) -> String {
        const NAME_WIDTH: usize = 220;
        const CELL_WIDTH: usize = 120;
        const CELL_HEIGHT: usize = 28;
        const TOP: usize = 56;
        let zones = self.availability_zones.len();
        let width = NAME_WIDTH + CELL_WIDTH * (zones + 1) + 20;
        let height = TOP + CELL_HEIGHT * self.components.len().max(1) + 40;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let _ = writeln!(
            svg,
            "<title>Copies per AZ: {} / {}</title>",
            escape_xml(&self.endpoint_name),
            escape_xml(&self.variant_name)
        );
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{} / {}: copies per AZ</text>",
            escape_xml(&self.endpoint_name),
            escape_xml(&self.variant_name)
        );
        for (z, az) in self.availability_zones.iter().enumerate() {
            let x = NAME_WIDTH + CELL_WIDTH * z + CELL_WIDTH / 2;
            let _ = writeln!(svg, "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>", TOP - 8, escape_xml(az));
        }
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">imbalance / max</text>",
            NAME_WIDTH + CELL_WIDTH * zones + CELL_WIDTH / 2,
            TOP - 8
        );
        for (row, component) in self.components.iter().enumerate() {
            let y = TOP + CELL_HEIGHT * row;
            let text_y = y + CELL_HEIGHT / 2 + 4;
            let _ = writeln!(
                svg,
                "<text x=\"10\" y=\"{text_y}\">{}</text>",
                escape_xml(&shorten(&component.inference_component_name, 30))
            );
            for (z, &copies) in component.copies_per_az.iter().enumerate() {
                let x = NAME_WIDTH + CELL_WIDTH * z;
                let fill = cell_colour(copies, component.placed, zones);
                let label = match (copies.saturating_mul(100).saturating_add(component.placed / 2))
                    .checked_div(component.placed)
                {
                    None => "0".to_string(),
                    Some(percent) => format!("{copies} ({percent}%)"),
                };
                let _ = writeln!(
                    svg,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{CELL_WIDTH}\" height=\"{CELL_HEIGHT}\" fill=\"{fill}\" stroke=\"#ffffff\"><title>{} in {}: {copies} of {} copies</title></rect>",
                    escape_xml(&component.inference_component_name),
                    escape_xml(self.availability_zones.get(z).map_or("", String::as_str)),
                    component.placed
                );
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{text_y}\" text-anchor=\"middle\">{label}</text>",
                    x + CELL_WIDTH / 2
                );
            }
            let x = NAME_WIDTH + CELL_WIDTH * zones;
            let (fill, label) = match component.max_imbalance {
                Some(max) => (
                    if component.balance_excess > 0 { "#f4a582" } else { "#d9f0d3" },
                    format!("{} / {max}", component.imbalance),
                ),
                None => ("#eeeeee", format!("{} / -", component.imbalance)),
            };
            let _ = writeln!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{CELL_WIDTH}\" height=\"{CELL_HEIGHT}\" fill=\"{fill}\" stroke=\"#ffffff\"/>"
            );
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{text_y}\" text-anchor=\"middle\">{label}</text>",
                x + CELL_WIDTH / 2
            );
        }
        let legend_y = TOP + CELL_HEIGHT * self.components.len().max(1) + 24;
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"{legend_y}\" font-size=\"11\">red: no copies in the AZ; yellow: below an even share; green: at least an even share; grey: nothing placed</text>"
        );
        svg.push_str("</svg>\n");
        svg
    }
}

/// One component's line of the report: copies per AZ and per instance, what one AZ or one
/// instance lost would leave, and the warnings.
fn component_reliability(
    problem: &Problem,
    fleet: &FinalFleet,
    index: usize,
    component: &crate::problem::Component,
    copies_per_az: Vec<u64>,
) -> ComponentReliability {
    let placed: u64 = copies_per_az.iter().sum();
    let most = copies_per_az.iter().copied().max().unwrap_or(0);
    let worst_az = (placed > 0)
        .then(|| copies_per_az.iter().position(|&c| c == most).and_then(|z| problem.azs.get(z).cloned()))
        .flatten();
    let mut holders = 0u64;
    let mut worst_instance: Option<(&str, u64)> = None;
    for instance in &fleet.instances {
        let copies = u64::from(instance.copies_of(index));
        if copies > 0 {
            holders += 1;
            if worst_instance.is_none_or(|(_, best)| copies > best) {
                worst_instance = Some((&instance.id, copies));
            }
        }
    }
    let most_on_instance = worst_instance.map_or(0, |(_, c)| c);
    let copy_count = u64::from(component.copy_count);
    let excess = balance_excess(&copies_per_az, component.max_imbalance);
    let mut warnings = Vec::new();
    if placed > 0 && copies_per_az.iter().filter(|&&c| c > 0).count() == 1 {
        warnings.push(ReliabilityWarning::SingleAz);
    }
    if copy_count == 1 {
        warnings.push(ReliabilityWarning::SingleCopy);
    }
    if placed < copy_count {
        warnings.push(ReliabilityWarning::Unplaced);
    }
    if excess > 0 {
        warnings.push(ReliabilityWarning::ImbalanceExceeded);
    }
    if placed > 1 && holders == 1 {
        warnings.push(ReliabilityWarning::SingleInstance);
    }
    ComponentReliability {
        inference_component_name: component.name.clone(),
        placement_strategy: match component.strategy {
            PlacementStrategy::Spread => "SPREAD".into(),
            PlacementStrategy::Binpack => "BINPACK".into(),
        },
        copy_count,
        placed,
        imbalance: imbalance(&copies_per_az),
        max_imbalance: component.max_imbalance,
        balance_excess: excess,
        instances: holders,
        copies_left_after_az_loss: placed - most,
        worst_az,
        copies_left_after_instance_loss: placed.saturating_sub(most_on_instance),
        worst_instance: worst_instance.map(|(id, _)| id.to_string()),
        copies_per_az,
        warnings,
    }
}

/// Red → yellow → green by `copies` relative to an even share (`placed / zones`).
fn cell_colour(copies: u64, placed: u64, zones: usize) -> String {
    if placed == 0 || zones == 0 {
        return "#dddddd".to_string();
    }
    // fraction of an even share, in [0, 1]: copies * zones / placed.
    let fraction = ((copies as f64) * (zones as f64) / (placed as f64)).min(1.0);
    let (red, yellow, green) = ((215.0, 48.0, 39.0), (254.0, 224.0, 139.0), (26.0, 152.0, 80.0));
    let mix = |a: (f64, f64, f64), b: (f64, f64, f64), t: f64| {
        (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t, a.2 + (b.2 - a.2) * t)
    };
    let (r, g, b) =
        if fraction < 0.5 { mix(red, yellow, fraction * 2.0) } else { mix(yellow, green, fraction * 2.0 - 1.0) };
    format!("#{:02x}{:02x}{:02x}", r.round() as u8, g.round() as u8, b.round() as u8)
}

/// Renders `header` and `rows` with the crate's table writer: columns before `numeric_from` and
/// the last column left-aligned, the others (numbers) right-aligned.
fn write_table(out: &mut String, header: &[String], rows: Vec<Vec<String>>, numeric_from: usize) {
    let last = header.len().saturating_sub(1);
    let columns: Vec<(&str, Align)> = header
        .iter()
        .enumerate()
        .map(|(index, name)| {
            (name.as_str(), if index >= numeric_from && index != last { Align::Right } else { Align::Left })
        })
        .collect();
    let mut table = Table::new(&columns);
    for row in rows {
        table.row(row);
    }
    out.push_str(&table.render(""));
}

/// For `skip_serializing_if`.
fn is_zero(value: &u64) -> bool {
    *value == 0
}
