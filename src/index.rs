//! Typed indices into a [`Problem`](crate::Problem)'s instance types, AZs and components.
//!
//! All three are positions in a `Vec`, so as bare `usize`s a call such as
//! `launch_limit(az, type_index)` compiles and silently reads the wrong cell. Where a type and an AZ
//! index (or a component and a type index) travel side by side, fleetplan passes these newtypes
//! instead, so swapping them is a type error. They order, hash and compare exactly as the `usize`
//! inside, so maps keyed by them iterate in the same order as before; hot loops that index a `Vec`
//! call `.index()`.

macro_rules! index_newtype {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub struct $name(usize);

        impl $name {
            #[doc = concat!("The ", $what, " at position `index`.")]
            #[inline]
            pub const fn new(index: usize) -> Self {
                Self(index)
            }

            #[doc = concat!("Position of the ", $what, ", for indexing a `Vec`.")]
            #[inline]
            pub const fn index(self) -> usize {
                self.0
            }
        }

        impl From<usize> for $name {
            #[inline]
            fn from(index: usize) -> Self {
                Self(index)
            }
        }

        impl From<$name> for usize {
            #[inline]
            fn from(index: $name) -> usize {
                index.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

index_newtype!(
    /// Index into [`Problem::instance_types`](crate::Problem::instance_types).
    ///
    /// A distinct type from [`AzIndex`] and [`ComponentIndex`], so passing an AZ index where a
    /// type index is expected does not compile:
    ///
    /// ```compile_fail,E0308
    /// use fleetplan::{AzIndex, TypeIndex};
    ///
    /// fn wants_type(type_index: TypeIndex) -> usize {
    ///     type_index.index()
    /// }
    /// wants_type(AzIndex::new(0)); // expected `TypeIndex`, found `AzIndex`
    /// ```
    ///
    /// The same call with the right index compiles:
    ///
    /// ```
    /// use fleetplan::{AzIndex, TypeIndex};
    ///
    /// fn wants_type(type_index: TypeIndex) -> usize {
    ///     type_index.index()
    /// }
    /// assert_eq!(wants_type(TypeIndex::new(3)), 3);
    /// assert_eq!(AzIndex::from(1).index(), 1);
    /// ```
    TypeIndex,
    "instance type"
);

index_newtype!(
    /// Index into [`Problem::azs`](crate::Problem::azs).
    AzIndex,
    "availability zone"
);

index_newtype!(
    /// Index into [`Problem::components`](crate::Problem::components).
    ComponentIndex,
    "component"
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn index_newtypes_round_trip_and_order_as_usize() {
        assert_eq!(TypeIndex::new(4).index(), 4);
        assert_eq!(usize::from(AzIndex::from(2)), 2);
        assert_eq!(ComponentIndex::from(7), ComponentIndex::new(7));
        assert_eq!(format!("{} {:?}", TypeIndex::new(5), AzIndex::new(1)), "5 AzIndex(1)");
        let keys: Vec<(TypeIndex, AzIndex)> =
            BTreeMap::from([((TypeIndex::new(1), AzIndex::new(0)), ()), ((TypeIndex::new(0), AzIndex::new(2)), ())])
                .into_keys()
                .collect();
        assert_eq!(keys, vec![(TypeIndex::new(0), AzIndex::new(2)), (TypeIndex::new(1), AzIndex::new(0))]);
    }
}
