//! Weighted utilisation and target tracking for mixed fleets.
