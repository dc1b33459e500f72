//! What a checker reports: [`Violation`]s and their [`ViolationKind`]s. At the bottom of the
//! layers, so that the plan checker (`verify`), the step checkers and the fleet replay share one
//! vocabulary without depending on each other.

use std::fmt;

use serde::Serialize;

/// Which rule a [`Violation`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[non_exhaustive]
pub enum ViolationKind {
    /// An action names something that does not exist or cannot be acted on.
    Reference,
    /// Copies on an instance exceed its accelerators, milli-cores or MiB.
    Packing,
    /// A copy on a type its component may not use, or a launch outside the pool.
    Eligibility,
    /// More launches of a (type, AZ) than `Reserved + Available`.
    Capacity,
    /// Min/MaxInstanceCount broken, or an existing instance kept empty that they do not require.
    InstanceBounds,
    /// More copies than `CopyCount`.
    CopyCount,
    /// A removal the rules do not allow (no excess, or a disguised move).
    Removal,
    /// The SPREAD quality rule is broken.
    Spread,
    /// What the plan claims does not match its actions: the reported objective, bound or
    /// `Unplaced` counts, or `Status: Infeasible` on a plan that meets every hard constraint.
    Accounting,
    /// A new copy on an instance whose `State` is `Draining` (contract §6).
    Draining,
    /// A consolidation step breaks a rule of docs/contract.md §3 (step size, release of a busy instance,
    /// imbalance growing, a move the fleet cannot execute).
    Consolidation,
    /// A plan's `Actions` are not in the contract's order (launches, removals, placements,
    /// terminations), or executing them one after another overbooks an instance on the way
    /// (docs/contract.md §4.1).
    Order,
    /// A rebalancing step breaks a rule of docs/contract.md §7 (step size, release of a busy or
    /// just-launched instance, copy counts changing, imbalance growing, draining order, a move
    /// the fleet cannot execute).
    Rebalance,
    /// A check the simulator runs after every tick failed (docs/simulate.md); the message names
    /// the tick and the check.
    Simulation,
}

impl ViolationKind {
    /// Whether the kind breaks a hard constraint (docs/contract.md §2.1), as opposed to a quality
    /// rule, the accounting of what a plan claims, or the order of its actions.
    pub fn is_hard_constraint(self) -> bool {
        !matches!(self, ViolationKind::Spread | ViolationKind::Accounting | ViolationKind::Order)
    }
}

/// One broken rule, with a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Violation {
    /// Which rule.
    pub kind: ViolationKind,
    /// What exactly.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}
