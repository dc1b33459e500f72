//! Reading a model description (`fleetplan size MODEL.json`) with the scenario reader's rules:
//! every type error with its JSON path, keys given twice are errors, numbers echoed as written.
//! Unlike a scenario (which may be a real API payload full of fields fleetplan does not read),
//! a model file is fleetplan's own format, so every unknown key is an error, with the known key
//! it most likely misspells.

use serde_json::Value;

use super::{join, parse, shadows, unknown_keys, Reader};
use crate::error::{Issue, IssueKind, ValidationError};
use crate::sizing::{
    overhead_problem, range_problem, KvCache, ModelDescription, Precision, MAX_CONTEXT_LENGTH,
    MAX_CPU_CORES_PER_ACCELERATOR, MAX_HOST_MEMORY_OVERHEAD_MIB, MAX_KV_BYTES_PER_TOKEN, MAX_KV_DIMENSION,
    MAX_PARAMETER_COUNT, MAX_TARGET_CONCURRENCY,
};

impl ModelDescription {
    /// Reads a model file (docs/sizing.md). Type errors name their JSON path; every problem is
    /// reported, and every key the reader does not know is an error (a misspelt key would
    /// otherwise silently size with a default).
    pub fn from_json(text: &str) -> Result<ModelDescription, ValidationError> {
        model_description_from_json(text)
    }
}

/// Parses and validates a model description; type and semantic problems are reported together.
pub(crate) fn model_description_from_json(text: &str) -> Result<ModelDescription, ValidationError> {
    let parsed = parse(text)?;
    let mut reader =
        Reader { issues: Vec::new(), known: std::collections::BTreeMap::new(), raw_numbers: &parsed.raw_numbers };
    let model = reader.model_description(&parsed.value);
    let mut issues = reader.issues;
    issues
        .extend(parsed.duplicates.into_iter().map(|path| Issue::new(IssueKind::DuplicateKey, path, "key given twice")));
    let mut unknown = Vec::new();
    unknown_keys(&parsed.value, &mut String::new(), &reader.known, &mut unknown);
    for key in unknown {
        let message = match key.suggestion {
            Some(known) => format!("unknown key; did you mean {known}?"),
            None => "unknown key".to_string(),
        };
        issues.push(Issue::new(IssueKind::UnknownKey, key.path, message));
    }
    let Some(model) = model else { return Err(ValidationError::new(issues)) };
    let typed_count = issues.len();
    for issue in model.issues() {
        // A field with a type or range error was defaulted: its semantic issue is noise.
        if !issues[..typed_count].iter().any(|typed| shadows(&typed.path, &issue.path)) {
            issues.push(issue);
        }
    }
    if issues.is_empty() {
        Ok(model)
    } else {
        Err(ValidationError::new(issues))
    }
}

impl Reader<'_> {
    /// A whole number in `[min, max]`, or an issue and `min` (the model's checks then see a
    /// valid value, so only this issue is reported).
    fn bounded(&mut self, value: &Value, path: &str, min: u64, max: u64) -> u64 {
        let before = self.issues.len();
        let number = self.integer(value, path);
        if self.issues.len() > before {
            return min;
        }
        let shown = self.describe_at(value, path);
        match range_problem(&shown, number, min, max) {
            Some(message) => {
                self.error(IssueKind::OutOfRange, path, message);
                min
            }
            None => number as u64,
        }
    }

    fn bounded_field(
        &mut self,
        map: &serde_json::Map<String, Value>,
        key: &'static str,
        path: &str,
        min: u64,
        max: u64,
    ) -> Option<u64> {
        let value = self.field(map, key)?;
        Some(self.bounded(value, &join(path, key), min, max))
    }

    fn required_bounded(
        &mut self,
        map: &serde_json::Map<String, Value>,
        key: &'static str,
        path: &str,
        min: u64,
        max: u64,
    ) -> u64 {
        match self.required(map, key, path) {
            Some(value) => self.bounded(value, &join(path, key), min, max),
            None => min,
        }
    }

    fn precision(&mut self, value: &Value, path: &str) -> Option<Precision> {
        let before = self.issues.len();
        let name = self.string(value, path);
        if self.issues.len() > before {
            return None;
        }
        if let Some(precision) = Precision::from_name(&name) {
            return Some(precision);
        }
        let names: Vec<&str> = Precision::ALL.iter().map(|precision| precision.name()).collect();
        let shown = crate::problem::quoted(&name);
        let message = match Precision::ALL.iter().find(|precision| precision.name().eq_ignore_ascii_case(&name)) {
            Some(precision) => format!("unknown precision {shown}; did you mean {precision}?"),
            None => format!("unknown precision {shown}; expected one of {}", names.join(", ")),
        };
        self.error(IssueKind::InvalidValue, path, message);
        None
    }

    fn model_description(&mut self, value: &Value) -> Option<ModelDescription> {
        let map = self.object(value, "")?;
        let kv_placeholder = KvCache::PerToken { bytes: 1 };
        let mut model = ModelDescription::new("", 1, Vec::new(), kv_placeholder, 1, 1);
        model.name = self.req_string(map, "Name", "");
        model.parameter_count = self.required_bounded(map, "ParameterCount", "", 1, MAX_PARAMETER_COUNT);
        if let Some(list) = self.required(map, "WeightPrecisions", "") {
            // Duplicates are reported here, by their index in the file; the model keeps the
            // valid precisions once each, so its own checks add nothing about the entries.
            let mut precisions: Vec<Precision> = Vec::new();
            for (index, item) in self.array(list, "WeightPrecisions").iter().enumerate() {
                let path = format!("WeightPrecisions[{index}]");
                match self.precision(item, &path) {
                    Some(precision) if precisions.contains(&precision) => {
                        self.error(IssueKind::Duplicate, &path, format!("{precision} is listed twice"))
                    }
                    Some(precision) => precisions.push(precision),
                    None => {}
                }
            }
            model.weight_precisions = precisions;
        }
        if let Some(kv) = self.required(map, "KvCache", "") {
            model.kv_cache = self.kv_cache(kv, "KvCache").unwrap_or(kv_placeholder);
        }
        model.context_length = self.required_bounded(map, "ContextLength", "", 1, MAX_CONTEXT_LENGTH);
        model.target_concurrency = self.required_bounded(map, "TargetConcurrency", "", 1, MAX_TARGET_CONCURRENCY);
        if let Some(value) = self.field(map, "OverheadFraction") {
            let before = self.issues.len();
            let number = self.number(value, "OverheadFraction");
            if self.issues.len() == before {
                let shown = self.describe_at(value, "OverheadFraction");
                match overhead_problem(&shown, number) {
                    Some(message) => self.error(IssueKind::OutOfRange, "OverheadFraction", message),
                    None => model.overhead_fraction = number,
                }
            }
        }
        if let Some(mib) = self.bounded_field(map, "HostMemoryOverheadMiB", "", 0, MAX_HOST_MEMORY_OVERHEAD_MIB) {
            model.host_memory_overhead_mib = mib;
        }
        if let Some(cores) = self.bounded_field(map, "CpuCoresPerAccelerator", "", 1, MAX_CPU_CORES_PER_ACCELERATOR) {
            model.cpu_cores_per_accelerator = cores;
        }
        Some(model)
    }

    fn kv_cache(&mut self, value: &Value, path: &str) -> Option<KvCache> {
        let map = self.object(value, path)?;
        let per_token = self.bounded_field(map, "BytesPerToken", path, 1, MAX_KV_BYTES_PER_TOKEN);
        let architecture_keys = ["Layers", "KeyValueHeads", "HeadDim", "Precision"];
        // Look every architecture key up first so all of them are known keys of this object.
        let given: Vec<&'static str> =
            architecture_keys.into_iter().filter(|key| self.field(map, key).is_some()).collect();
        match (per_token, given.is_empty()) {
            (Some(bytes), true) => Some(KvCache::PerToken { bytes }),
            (Some(_), false) => {
                self.error(
                    IssueKind::Conflict,
                    path,
                    format!("give BytesPerToken or the architecture ({}), not both", given.join(", ")),
                );
                None
            }
            (None, true) => {
                self.error(
                    IssueKind::Conflict,
                    path,
                    "give BytesPerToken, or Layers, KeyValueHeads and HeadDim".to_string(),
                );
                None
            }
            (None, false) => {
                let layers = self.required_bounded(map, "Layers", path, 1, MAX_KV_DIMENSION);
                let key_value_heads = self.required_bounded(map, "KeyValueHeads", path, 1, MAX_KV_DIMENSION);
                let head_dim = self.required_bounded(map, "HeadDim", path, 1, MAX_KV_DIMENSION);
                let precision = match self.field(map, "Precision") {
                    Some(value) => self.precision(value, &join(path, "Precision")).unwrap_or(Precision::Fp16),
                    None => Precision::Fp16,
                };
                Some(KvCache::Architecture { layers, key_value_heads, head_dim, precision })
            }
        }
    }
}
