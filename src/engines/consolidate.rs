//! Consolidation (spec §3): move copies between existing instances so instances can be released.

use serde::{Deserialize, Serialize};

use crate::plan::Objective;
use crate::problem::Problem;

/// One move: a copy of a component from one instance to another (make-before-break).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Move {
    /// Component.
    pub inference_component_name: String,
    /// Source instance.
    pub from: String,
    /// Target instance.
    pub to: String,
}

/// One executable step: moves, then the instances they empty are released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConsolidationStep {
    /// Moves of this step.
    pub moves: Vec<Move>,
    /// Instances released at the end of the step.
    pub release: Vec<String>,
}

/// A consolidation plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConsolidationPlan {
    /// Steps, executed in order.
    pub steps: Vec<ConsolidationStep>,
    /// Objective of the final fleet.
    pub objective: Objective,
}

/// Plans consolidation of the problem's fleet.
pub fn consolidate(problem: &Problem) -> ConsolidationPlan {
    let fleet = crate::fleet::FinalFleet::apply(problem, &[]).0;
    ConsolidationPlan { steps: Vec::new(), objective: crate::fleet::objective(problem, &fleet) }
}
