//! A simulation as a timeline table, JSON and an SVG chart (docs/simulate.md).

use std::fmt::Write as _;

use super::Simulation;
use crate::render::escape_xml;
use crate::text::{micros_text, Align, Table};

/// Colours of priority tiers 1–6 (preferred = green, fallbacks warmer, outside the pool grey).
/// The chart's plot area in the SVG: left and top margins, width and height.
const LEFT: f64 = 60.0;
const TOP: f64 = 50.0;
const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 300.0;

const TIER_COLOURS: [&str; 6] = ["#1a9850", "#91cf60", "#fee08b", "#fc8d59", "#d73027", "#999999"];

impl Simulation {
    /// The highest priority tier any tick has instances of, at least 5 (the table always shows
    /// p1–p5; a column p6 appears only when fleet types outside the pool ran).
    fn tiers(&self) -> u8 {
        let highest = self.ticks.iter().flat_map(|tick| tick.instances_by_priority.keys().copied()).max().unwrap_or(1);
        highest.max(5)
    }

    /// The timeline table (tick, time, instances per priority tier, largest AZ imbalance, cost,
    /// unplaced copies, events), then a summary: how many ticks passed every invariant check,
    /// or every failure. Names are escaped.
    pub fn to_table(&self) -> String {
        let tiers = self.tiers();
        let units: std::collections::BTreeSet<_> = self.ticks.iter().map(|tick| tick.cost_unit).collect();
        let cost_header = match units.iter().next() {
            Some(unit) if units.len() == 1 => format!("cost ({})", unit.suffix()),
            _ => "cost".to_string(),
        };
        let mut columns: Vec<(String, Align)> = vec![("tick".into(), Align::Right), ("time".into(), Align::Right)];
        columns.extend((1..=tiers).map(|tier| (format!("p{tier}"), Align::Right)));
        // Launch latency is shown only when a script has it.
        let pending = self.ticks.iter().any(|tick| tick.pending_instances > 0);
        columns.extend([
            ("imbalance".to_string(), Align::Right),
            (cost_header, Align::Right),
            ("unplaced".to_string(), Align::Right),
            ("available".to_string(), Align::Right),
        ]);
        if pending {
            columns.push(("pending".to_string(), Align::Right));
        }
        columns.push(("events".to_string(), Align::Left));
        let borrowed: Vec<(&str, Align)> = columns.iter().map(|(name, align)| (name.as_str(), *align)).collect();
        let mut table = Table::new(&borrowed);
        for tick in &self.ticks {
            let mut row = vec![tick.tick.to_string(), tick.time.to_string()];
            row.extend((1..=tiers).map(|tier| tick.instances_of_priority(tier).to_string()));
            let cost = if units.len() == 1 {
                micros_text(tick.cost_micros)
            } else {
                format!("{} {}", micros_text(tick.cost_micros), tick.cost_unit.suffix())
            };
            row.extend([
                tick.max_az_imbalance().to_string(),
                cost,
                tick.unplaced_copies.to_string(),
                format!("{}/{}", tick.available_copies, tick.desired_copies),
            ]);
            if pending {
                row.push(tick.pending_instances.to_string());
            }
            row.push(tick.events.join("; "));
            table.row(row);
        }
        let mut out = table.render("");
        let total = self.ticks.len();
        let _ = writeln!(out);
        out.push_str(&self.summary_text(units.iter().next().copied()));
        if !matches!(self.stop_reason, crate::plan::StopReason::Completed) {
            let _ = writeln!(out, "stopped after {total} ticks: {}", self.stop_reason);
        }
        if self.failures.is_empty() {
            let _ = writeln!(out, "invariant checks passed: {total} ticks");
        } else {
            let ticks: std::collections::BTreeSet<u32> = self.failures.iter().map(|failure| failure.tick).collect();
            let _ = writeln!(
                out,
                "invariant checks FAILED: {} failures on {} of {total} ticks",
                self.failures.len(),
                ticks.len()
            );
            let mut failures = Table::new(&[("tick", Align::Right), ("check", Align::Left), ("what", Align::Left)]);
            for failure in &self.failures {
                failures.row(vec![failure.tick.to_string(), format!("{:?}", failure.check), failure.message.clone()]);
            }
            out.push_str(&failures.render("  "));
        }
        out
    }

    /// The summary lines: time to preferred against the optimum, copy-ticks lost, cost-hours,
    /// moves and launches.
    fn summary_text(&self, unit: Option<crate::plan::CostUnit>) -> String {
        let summary = &self.summary;
        let optimum: Vec<String> =
            summary.optimum_by_priority.iter().map(|(priority, count)| format!("p{priority} {count}")).collect();
        let optimum = if optimum.is_empty() { "no instances".to_string() } else { optimum.join(", ") };
        let reached = match (summary.time_to_preferred, summary.preferred_tick) {
            (Some(ticks), Some(tick)) => format!("{ticks} ticks (at tick {tick})"),
            _ => "not reached".to_string(),
        };
        // Cost per hour summed over hours: USD, or instance-hours when a type has no price.
        let cost = match unit {
            Some(crate::plan::CostUnit::UsdPerHour) => format!("cost: {} USD", micros_text(summary.cost_hours_micros)),
            _ => format!("cost: {} instance-hours", micros_text(summary.cost_hours_micros)),
        };
        format!(
            "optimum: {optimum}, {} copies; capacity back at tick {}; time to preferred: {reached}\ncopy-ticks lost: \
             {}; {cost}; moves: {}; launches: {}\n",
            summary.optimum_placed_copies,
            summary.recovery_tick,
            summary.copy_ticks_lost,
            summary.moves,
            summary.launches
        )
    }

    /// The whole record as pretty JSON, with a trailing newline (deterministic).
    #[cfg(feature = "json")]
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// A stacked area chart of instances per priority tier over the ticks (tier 1 at the
    /// bottom). Deterministic, well-formed XML; names are XML-escaped.
    pub fn to_svg(&self) -> String {
        let tiers = self.tiers();
        let peak = self.ticks.iter().map(|tick| tick.instances).max().unwrap_or(0).max(1);
        let total_width = LEFT + WIDTH + 140.0;
        let total_height = TOP + HEIGHT + 50.0;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total_width}\" height=\"{total_height}\" viewBox=\"0 0 {total_width} {total_height}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let title = format!("{}: instances by priority tier per tick", self.endpoint_name);
        let _ = writeln!(svg, "<title>{}</title>", escape_xml(&title));
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>",
            escape_xml(&title)
        );
        self.write_tier_bands(&mut svg, tiers, peak);
        write_axes(
            &mut svg,
            peak,
            self.ticks.first().map_or(0, |tick| tick.tick),
            self.ticks.last().map_or(0, |tick| tick.tick),
            self.tick_seconds,
        );
        write_legend(&mut svg, tiers);
        svg.push_str("</svg>\n");
        svg
    }

    /// One polygon per tier, stacked from tier 1 up, scaled so that `peak` instances fill the
    /// chart's height.
    fn write_tier_bands(&self, svg: &mut String, tiers: u8, peak: u32) {
        let count = self.ticks.len().max(1);
        let x_of = |index: usize| LEFT + WIDTH * index as f64 / count as f64;
        let y_of = |instances: u32| TOP + HEIGHT - HEIGHT * f64::from(instances) / f64::from(peak);
        // Each tier is a band between the sum of the tiers below it and that sum plus itself,
        // drawn as one polygon of steps (a tick is a constant interval).
        let mut below: Vec<u32> = vec![0; self.ticks.len()];
        for tier in 1..=tiers {
            let above: Vec<u32> = self
                .ticks
                .iter()
                .zip(&below)
                .map(|(tick, &base)| base.saturating_add(tick.instances_of_priority(tier)))
                .collect();
            if above == below {
                continue;
            }
            let mut points: Vec<String> = Vec::new();
            for (index, &top) in above.iter().enumerate() {
                points.push(format!("{:.1},{:.1}", x_of(index), y_of(top)));
                points.push(format!("{:.1},{:.1}", x_of(index + 1), y_of(top)));
            }
            for (index, &bottom) in below.iter().enumerate().rev() {
                points.push(format!("{:.1},{:.1}", x_of(index + 1), y_of(bottom)));
                points.push(format!("{:.1},{:.1}", x_of(index), y_of(bottom)));
            }
            let colour = TIER_COLOURS.get(usize::from(tier) - 1).copied().unwrap_or("#999999");
            let _ = writeln!(
                svg,
                "<polygon points=\"{}\" fill=\"{colour}\" stroke=\"none\"><title>priority {tier}</title></polygon>",
                points.join(" ")
            );
            below = above;
        }
    }
}

/// The chart's axes with their labels: instances from 0 to `peak`, ticks `first` to `last`.
fn write_axes(svg: &mut String, peak: u32, first: u32, last: u32, tick_seconds: u32) {
    // Axes and labels.
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333333\"/>",
        TOP + HEIGHT,
        LEFT + WIDTH,
        TOP + HEIGHT
    );
    let _ =
        writeln!(svg, "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{:.1}\" stroke=\"#333333\"/>", TOP + HEIGHT);
    let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{peak}</text>", LEFT - 6.0, TOP + 4.0);
    let _ = writeln!(svg, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>", LEFT - 6.0, TOP + HEIGHT + 4.0);
    let _ = writeln!(svg, "<text x=\"{LEFT}\" y=\"{:.1}\">tick {first}</text>", TOP + HEIGHT + 18.0);
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">tick {last}</text>",
        LEFT + WIDTH,
        TOP + HEIGHT + 18.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">instances (stacked by priority) per tick of {} s</text>",
        LEFT + WIDTH / 2.0,
        TOP + HEIGHT + 36.0,
        tick_seconds
    );
}

/// The tiers' colours and names, beside the chart.
fn write_legend(svg: &mut String, tiers: u8) {
    for tier in 1..=tiers {
        let y = TOP + 20.0 * f64::from(tier - 1);
        let colour = TIER_COLOURS.get(usize::from(tier) - 1).copied().unwrap_or("#999999");
        let label = if tier == 6 { "outside pool".to_string() } else { format!("priority {tier}") };
        let _ = writeln!(
                svg,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"14\" height=\"14\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{label}</text>",
                LEFT + WIDTH + 16.0,
                LEFT + WIDTH + 36.0,
                y + 11.0
            );
    }
}
