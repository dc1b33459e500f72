//! The JSON output of a sizing (`fleetplan size --json`): the keys in the order a reader wants
//! them (serialised directly, not through `serde_json::Value`, which would sort them).

use serde::Serialize;

use crate::sizing::{Build, Outcome, Sizing};

impl Sizing {
    /// The sizing as pretty JSON: `Specifications` (ready for an inference component),
    /// `InstancePools` (with `ModelNameOverride`, for types with a known priority),
    /// `MaxConcurrency` (type → per-instance maximum) and `Types` (every number, or the reason).
    /// Types keep their input order throughout.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&Document::of(self)).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Document<'a> {
    model: &'a str,
    specifications: Vec<Specification<'a>>,
    instance_pools: Vec<Pool<'a>>,
    max_concurrency: MaxConcurrency<'a>,
    types: Vec<TypeEntry<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Specification<'a> {
    instance_type: &'a str,
    model_name: &'a str,
    compute_resource_requirements: Requirements,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Requirements {
    number_of_accelerator_devices_required: u64,
    number_of_cpu_cores_required: u64,
    min_memory_required_in_mb: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Pool<'a> {
    instance_type: &'a str,
    priority: u8,
    model_name_override: &'a str,
}

/// Type → maximum concurrency, as a JSON object in type order.
struct MaxConcurrency<'a>(Vec<(&'a str, u64)>);

impl Serialize for MaxConcurrency<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct TypeEntry<'a> {
    instance_type: &'a str,
    fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(flatten)]
    build: Option<&'a Build>,
}

impl<'a> Document<'a> {
    fn of(sizing: &'a Sizing) -> Document<'a> {
        let fitting = || sizing.types.iter().filter_map(|sized| Some((sized, sized.build()?)));
        Document {
            model: &sizing.model,
            specifications: fitting()
                .map(|(sized, build)| Specification {
                    instance_type: &sized.instance_type,
                    model_name: &build.model_name,
                    compute_resource_requirements: Requirements {
                        number_of_accelerator_devices_required: build.accelerators,
                        number_of_cpu_cores_required: build.cpu_cores,
                        min_memory_required_in_mb: build.min_memory_mib,
                    },
                })
                .collect(),
            instance_pools: fitting()
                .filter_map(|(sized, build)| {
                    Some(Pool {
                        instance_type: &sized.instance_type,
                        priority: sized.priority?,
                        model_name_override: &build.model_name,
                    })
                })
                .collect(),
            max_concurrency: MaxConcurrency(
                fitting().map(|(sized, build)| (sized.instance_type.as_str(), build.max_concurrency)).collect(),
            ),
            types: sizing
                .types
                .iter()
                .map(|sized| match &sized.outcome {
                    Outcome::Fits(build) => {
                        TypeEntry { instance_type: &sized.instance_type, fits: true, reason: None, build: Some(build) }
                    }
                    Outcome::DoesNotFit(reason) => TypeEntry {
                        instance_type: &sized.instance_type,
                        fits: false,
                        reason: Some(reason),
                        build: None,
                    },
                })
                .collect(),
        }
    }
}
