//! The reliability report: copies per AZ, blast radius, fleet composition.
