//! The canonical order of a problem: AZs by name, instance types by (priority, name),
//! components by name, fleet instances by id.
//!
//! The planners run on this form of the problem they are given. Their searches break ties by
//! position in many places (which AZ, holder or component is tried first); on the canonical form
//! every position follows from names, so permuting the input (components, pool entries, AZs,
//! capacity, fleet) cannot change the plan. Ranking every tie by name instead, decision by
//! decision, was tried first and kept leaking: 18 of 150 hard generated endpoints changed their
//! objective under a shuffle of their lists. Plans name components, types, AZs and instances,
//! never positions, so a plan made on the canonical form is a plan of the original problem.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::index::{AzIndex, TypeIndex};
use crate::problem::Problem;

/// `order[new] = old`, and its inverse `position[old] = new`.
struct Permutation {
    order: Vec<usize>,
    position: Vec<usize>,
}

impl Permutation {
    /// The positions `0..len` sorted by `key` (stable; keys of a validated problem are unique).
    fn sorted_by<K: Ord>(len: usize, key: impl Fn(usize) -> K) -> Permutation {
        let mut order: Vec<usize> = (0..len).collect();
        order.sort_by_key(|&old| key(old));
        let mut position = vec![0; len];
        for (new, &old) in order.iter().enumerate() {
            position[old] = new;
        }
        Permutation { order, position }
    }

    fn is_identity(&self) -> bool {
        self.order.iter().enumerate().all(|(new, &old)| new == old)
    }

    /// The new position of `old` (an index out of range stays as it is: validation rules it out).
    fn new_of(&self, old: usize) -> usize {
        self.position.get(old).copied().unwrap_or(old)
    }

    /// `items` in the new order.
    fn apply<T: Clone>(&self, items: &[T]) -> Vec<T> {
        self.order.iter().filter_map(|&old| items.get(old).cloned()).collect()
    }
}

impl Problem {
    /// This problem in canonical order (see the module text): borrowed when it already is.
    pub(crate) fn canonical(&self) -> Cow<'_, Problem> {
        let azs = Permutation::sorted_by(self.azs.len(), |z| &self.azs[z]);
        let types = Permutation::sorted_by(self.types.len(), |t| (self.types[t].priority, &self.types[t].name));
        let components = Permutation::sorted_by(self.components.len(), |c| &self.components[c].name);
        let fleet = Permutation::sorted_by(self.fleet.len(), |i| &self.fleet[i].id);
        if azs.is_identity() && types.is_identity() && components.is_identity() && fleet.is_identity() {
            return Cow::Borrowed(self);
        }
        let mut problem = self.clone();
        problem.azs = azs.apply(&self.azs);
        problem.types = types.apply(&self.types);
        problem.components = components.apply(&self.components);
        for component in &mut problem.components {
            component.requirements = types.apply(&component.requirements);
        }
        problem.limits = types.apply(&self.limits).iter().map(|row| azs.apply(row)).collect();
        problem.fleet = fleet.apply(&self.fleet);
        for instance in &mut problem.fleet {
            instance.type_index = types.new_of(instance.type_index);
            instance.az_index = azs.new_of(instance.az_index);
            for (component, _) in &mut instance.copies {
                *component = components.new_of(*component);
            }
            instance.copies.sort_unstable();
        }
        problem.fleet_by_id =
            problem.fleet.iter().enumerate().map(|(index, instance)| (instance.id.clone(), index)).collect();
        problem.component_by_name =
            problem.components.iter().enumerate().map(|(index, component)| (component.name.clone(), index)).collect();
        problem.capacity_blocks = self
            .capacity_blocks
            .iter()
            .map(|(&(t, z), block)| {
                ((TypeIndex::new(types.new_of(t.index())), AzIndex::new(azs.new_of(z.index()))), *block)
            })
            .collect::<BTreeMap<_, _>>();
        Cow::Owned(problem)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::ScenarioBuilder;
    use crate::problem::Problem;

    #[test]
    fn reorders_names_and_remaps_every_index() {
        let scenario = ScenarioBuilder::new(["us-b", "us-a"])
            .pool("ml.g5.12xlarge", 2)
            .pool("ml.g5.2xlarge", 1)
            .component("zeta", 1, 4, 8.0, 8_192)
            .component("alpha", 2, 1, 4.0, 4_096)
            .capacity("ml.g5.12xlarge", "us-a", Some(3), 1)
            .fleet_instance("i-2", "ml.g5.12xlarge", "us-a", false)
            .fleet_instance("i-1", "ml.g5.2xlarge", "us-b", true)
            .fleet_copies("zeta", "i-2", 1)
            .fleet_copies("alpha", "i-1", 1)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let canonical = problem.canonical();
        let canonical = canonical.as_ref();
        assert_eq!(canonical.azs(), ["us-a", "us-b"]);
        let type_names: Vec<&str> = canonical.instance_types().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(type_names, ["ml.g5.2xlarge", "ml.g5.12xlarge"]);
        let names: Vec<&str> = canonical.components().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        let ids: Vec<&str> = canonical.fleet().iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["i-1", "i-2"]);
        // Every index follows its name.
        for instance in canonical.fleet() {
            let original = &problem.fleet()[problem.existing_index(&instance.id).unwrap()];
            assert_eq!(canonical.instance_types()[instance.type_index], problem.instance_types()[original.type_index]);
            assert_eq!(canonical.azs()[instance.az_index], problem.azs()[original.az_index]);
            let copies: Vec<(&str, u32)> =
                instance.copies.iter().map(|&(c, n)| (canonical.components()[c].name.as_str(), n)).collect();
            let expected: Vec<(&str, u32)> =
                original.copies.iter().map(|&(c, n)| (problem.components()[c].name.as_str(), n)).collect();
            assert_eq!(copies, expected);
        }
        for (t, info) in canonical.instance_types().iter().enumerate() {
            let old_t = problem.type_index(&info.name).unwrap();
            for (z, az) in canonical.azs().iter().enumerate() {
                let old_z = problem.az_index(az).unwrap();
                assert_eq!(canonical.limits[t][z], problem.limits[old_t][old_z], "{} {az}", info.name);
            }
            for component in canonical.components() {
                let old = &problem.components()[problem.component_index(&component.name).unwrap()];
                assert_eq!(component.requirements[t], old.requirements[old_t]);
            }
        }
        assert_eq!(canonical.component_index("zeta"), Some(1));
        assert_eq!(canonical.existing_index("i-2"), Some(1));
        // Canonical already: borrowed, not copied.
        assert!(matches!(canonical.canonical(), std::borrow::Cow::Borrowed(_)));
    }
}
