//! Reading a scenario from JSON with path-aware, complete type errors.
//!
//! serde's derive stops at the first type error and reports a line/column; users of a
//! SageMaker-shaped payload want every wrong field at once, named by its JSON path. So the
//! document is parsed into a [`serde_json::Value`] and walked by hand. Unknown keys are ignored.

use serde_json::{Map, Value};

use crate::error::{Issue, ValidationError};
use crate::model::*;

/// Parses a scenario from JSON text. Type errors name their JSON path; all are reported.
pub fn scenario_from_json(text: &str) -> Result<Scenario, ValidationError> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        ValidationError::new(vec![Issue { path: String::new(), message: format!("malformed JSON: {error}") }])
    })?;
    let mut reader = Reader::default();
    let scenario = reader.scenario(&value);
    if reader.issues.is_empty() {
        Ok(scenario)
    } else {
        Err(ValidationError::new(reader.issues))
    }
}

/// Reads a scenario and validates it into a [`crate::Problem`], reporting type and semantic
/// problems together.
pub fn problem_from_json(text: &str) -> Result<crate::Problem, ValidationError> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        ValidationError::new(vec![Issue { path: String::new(), message: format!("malformed JSON: {error}") }])
    })?;
    let mut reader = Reader::default();
    let scenario = reader.scenario(&value);
    if reader.issues.is_empty() {
        return crate::Problem::new(&scenario);
    }
    // Validate what could be read, but drop issues about fields that already have a type error:
    // their defaulted values would only produce follow-on noise.
    let typed_count = reader.issues.len();
    let mut issues = reader.issues;
    if let Err(semantic) = crate::Problem::new(&scenario) {
        for issue in semantic.issues() {
            // Compare with the type errors only, never with semantic issues kept before.
            let shadowed = issues[..typed_count].iter().any(|typed| shadows(&typed.path, &issue.path));
            if !shadowed {
                issues.push(issue.clone());
            }
        }
    }
    Err(ValidationError::new(issues))
}

/// Whether a type error at `typed` explains a semantic issue at `semantic`: the issue is about
/// the defaulted field itself or something inside it, or about the object directly holding it
/// (e.g. "one of Specification or Specifications is required" after `Specification` had the
/// wrong type). A list-level issue such as "6 pools given" is not explained by a type error deep
/// inside one entry, and `X[1]` is not a prefix of `X[10]`.
fn shadows(typed: &str, semantic: &str) -> bool {
    let is_boundary = |rest: &str| rest.is_empty() || rest.starts_with('.') || rest.starts_with('[');
    if let Some(rest) = semantic.strip_prefix(typed) {
        if is_boundary(rest) {
            return true;
        }
    }
    match typed.strip_prefix(semantic) {
        Some(rest) if !semantic.is_empty() && is_boundary(rest) => {
            // Only an immediate child: one key or one index below the issue's path.
            let child = rest.get(1..).unwrap_or("");
            !child.contains('.') && !child.contains('[')
        }
        _ => false,
    }
}

/// Describes a JSON value for an error message: strings quoted, long values cut.
pub(crate) fn describe(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        let cut: String = text.chars().take(37).collect();
        format!("{cut}...")
    } else {
        text
    }
}

#[derive(Default)]
struct Reader {
    issues: Vec<Issue>,
}

impl Reader {
    fn error(&mut self, path: &str, message: String) {
        self.issues.push(Issue { path: path.to_string(), message });
    }

    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.error(path, format!("expected an object, found {}", describe(other)));
                None
            }
        }
    }

    /// A field that may be absent or null.
    fn field<'v>(&mut self, map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        map.get(key).filter(|value| !value.is_null())
    }

    fn required<'v>(&mut self, map: &'v Map<String, Value>, key: &str, path: &str) -> Option<&'v Value> {
        let value = self.field(map, key);
        if value.is_none() {
            self.error(&join(path, key), "is required".to_string());
        }
        value
    }

    fn string(&mut self, value: &Value, path: &str) -> String {
        match value {
            Value::String(text) => text.clone(),
            other => {
                self.error(path, format!("expected a string, found {}", describe(other)));
                String::new()
            }
        }
    }

    fn number(&mut self, value: &Value, path: &str) -> f64 {
        match value.as_f64() {
            Some(number) => number,
            None => {
                self.error(path, format!("expected a number, found {}", describe(value)));
                0.0
            }
        }
    }

    fn integer(&mut self, value: &Value, path: &str) -> f64 {
        match value.as_f64() {
            Some(number) if number.fract() == 0.0 => number,
            _ => {
                self.error(path, format!("expected an integer, found {}", describe(value)));
                0.0
            }
        }
    }

    fn boolean(&mut self, value: &Value, path: &str) -> bool {
        match value {
            Value::Bool(flag) => *flag,
            other => {
                self.error(path, format!("expected true or false, found {}", describe(other)));
                false
            }
        }
    }

    fn array<'v>(&mut self, value: &'v Value, path: &str) -> &'v [Value] {
        match value {
            Value::Array(items) => items,
            other => {
                self.error(path, format!("expected an array, found {}", describe(other)));
                &[]
            }
        }
    }

    fn opt_string(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        let value = self.field(map, key)?;
        Some(self.string(value, &join(path, key)))
    }

    fn req_string(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> String {
        match self.required(map, key, path) {
            Some(value) => self.string(value, &join(path, key)),
            None => String::new(),
        }
    }

    fn opt_integer(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<f64> {
        let value = self.field(map, key)?;
        Some(self.integer(value, &join(path, key)))
    }

    fn opt_number(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<f64> {
        let value = self.field(map, key)?;
        Some(self.number(value, &join(path, key)))
    }

    fn list<T>(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        path: &str,
        mut item: impl FnMut(&mut Self, &Value, &str) -> T,
    ) -> Vec<T> {
        let Some(value) = self.field(map, key) else { return Vec::new() };
        let list_path = join(path, key);
        let items = self.array(value, &list_path);
        items.iter().enumerate().map(|(index, value)| item(self, value, &format!("{list_path}[{index}]"))).collect()
    }

    fn scenario(&mut self, value: &Value) -> Scenario {
        let mut scenario = Scenario::default();
        let Some(map) = self.object(value, "") else { return scenario };
        scenario.availability_zones = match self.required(map, "AvailabilityZones", "") {
            Some(_) => self.list(map, "AvailabilityZones", "", |reader, value, path| reader.string(value, path)),
            None => Vec::new(),
        };
        scenario.instance_types = self.list(map, "InstanceTypes", "", Self::instance_type);
        scenario.capacity = self.list(map, "Capacity", "", Self::capacity);
        if let Some(endpoint) = self.required(map, "Endpoint", "") {
            scenario.endpoint = self.endpoint(endpoint, "Endpoint");
        }
        scenario.inference_components = self.list(map, "InferenceComponents", "", Self::component);
        if let Some(fleet) = self.field(map, "Fleet") {
            scenario.fleet = self.fleet(fleet, "Fleet");
        }
        scenario.now = self.opt_integer(map, "Now", "");
        scenario.capacity_error_ttl_seconds = self.opt_integer(map, "CapacityErrorTtlSeconds", "");
        scenario.capacity_events = self.list(map, "CapacityEvents", "", Self::capacity_event);
        scenario
    }

    fn capacity_event(&mut self, value: &Value, path: &str) -> CapacityEvent {
        let mut event = CapacityEvent::default();
        let Some(map) = self.object(value, path) else { return event };
        event.instance_type = self.req_string(map, "InstanceType", path);
        event.availability_zone = self.req_string(map, "AvailabilityZone", path);
        event.event = self.req_string(map, "Event", path);
        if let Some(time) = self.required(map, "Time", path) {
            event.time = self.integer(time, &join(path, "Time"));
        }
        event
    }

    fn instance_type(&mut self, value: &Value, path: &str) -> InstanceTypeSpec {
        let mut spec = InstanceTypeSpec::default();
        let Some(map) = self.object(value, path) else { return spec };
        spec.instance_type = self.req_string(map, "InstanceType", path);
        for (key, slot, integer) in [
            ("AcceleratorCount", &mut spec.accelerator_count, true),
            ("VCpuCount", &mut spec.v_cpu_count, false),
            ("MemoryInMb", &mut spec.memory_in_mb, false),
        ] {
            if let Some(value) = self.required(map, key, path) {
                let field_path = join(path, key);
                *slot = if integer { self.integer(value, &field_path) } else { self.number(value, &field_path) };
            }
        }
        spec.accelerator_memory_gib = self.opt_number(map, "AcceleratorMemoryGiB", path).unwrap_or(0.0);
        spec.hourly_price = self.opt_number(map, "HourlyPrice", path);
        spec
    }

    fn capacity(&mut self, value: &Value, path: &str) -> CapacityEntry {
        let mut entry = CapacityEntry::default();
        let Some(map) = self.object(value, path) else { return entry };
        entry.instance_type = self.req_string(map, "InstanceType", path);
        entry.availability_zone = self.req_string(map, "AvailabilityZone", path);
        entry.available = self.opt_integer(map, "Available", path);
        entry.reserved = self.opt_integer(map, "Reserved", path).unwrap_or(0.0);
        entry
    }

    fn endpoint(&mut self, value: &Value, path: &str) -> Endpoint {
        let mut endpoint = Endpoint::default();
        let Some(map) = self.object(value, path) else { return endpoint };
        endpoint.endpoint_name = self.opt_string(map, "EndpointName", path).unwrap_or_default();
        endpoint.variant_name = self.opt_string(map, "VariantName", path).unwrap_or_default();
        endpoint.model_name = self.opt_string(map, "ModelName", path);
        endpoint.instance_type = self.opt_string(map, "InstanceType", path);
        endpoint.instance_pools = self.list(map, "InstancePools", path, |reader, value, path| {
            let mut pool = InstancePool::default();
            let Some(map) = reader.object(value, path) else { return pool };
            pool.instance_type = reader.req_string(map, "InstanceType", path);
            pool.priority = match reader.required(map, "Priority", path) {
                Some(value) => reader.integer(value, &join(path, "Priority")),
                None => 0.0,
            };
            pool.model_name_override = reader.opt_string(map, "ModelNameOverride", path);
            pool
        });
        endpoint.desired_instance_count = self
            .opt_integer(map, "DesiredInstanceCount", path)
            .or_else(|| self.opt_integer(map, "InitialInstanceCount", path));
        if let Some(scaling) = self.field(map, "ManagedInstanceScaling") {
            let scaling_path = join(path, "ManagedInstanceScaling");
            endpoint.managed_instance_scaling = self.scaling(scaling, &scaling_path);
        }
        endpoint
    }

    fn scaling(&mut self, value: &Value, path: &str) -> Option<ManagedInstanceScaling> {
        let map = self.object(value, path)?;
        let mut scaling = ManagedInstanceScaling {
            status: self.opt_string(map, "Status", path),
            min_instance_count: self.opt_integer(map, "MinInstanceCount", path),
            max_instance_count: self.opt_integer(map, "MaxInstanceCount", path),
            scale_in_policy: None,
        };
        if let Some(policy) = self.field(map, "ScaleInPolicy") {
            let policy_path = join(path, "ScaleInPolicy");
            if let Some(policy_map) = self.object(policy, &policy_path) {
                scaling.scale_in_policy = Some(ScaleInPolicySpec {
                    strategy: self.opt_string(policy_map, "Strategy", &policy_path),
                    cooldown_in_minutes: self.opt_integer(policy_map, "CooldownInMinutes", &policy_path),
                    maximum_step_size: self.opt_integer(policy_map, "MaximumStepSize", &policy_path),
                });
            }
        }
        Some(scaling)
    }

    fn component(&mut self, value: &Value, path: &str) -> InferenceComponent {
        let mut component = InferenceComponent::default();
        let Some(map) = self.object(value, path) else { return component };
        component.inference_component_name = self.req_string(map, "InferenceComponentName", path);
        if let Some(spec) = self.field(map, "Specification") {
            component.specification = Some(self.specification(spec, &join(path, "Specification")));
        }
        if self.field(map, "Specifications").is_some() {
            component.specifications = Some(self.list(map, "Specifications", path, Self::specification));
        }
        if let Some(runtime) = self.required(map, "RuntimeConfig", path) {
            let runtime_path = join(path, "RuntimeConfig");
            if let Some(runtime_map) = self.object(runtime, &runtime_path) {
                if let Some(count) = self.required(runtime_map, "CopyCount", &runtime_path) {
                    component.runtime_config.copy_count = self.integer(count, &join(&runtime_path, "CopyCount"));
                }
            }
        }
        component
    }

    fn specification(&mut self, value: &Value, path: &str) -> ComponentSpecification {
        let mut spec = ComponentSpecification::default();
        let Some(map) = self.object(value, path) else { return spec };
        spec.instance_type = self.opt_string(map, "InstanceType", path);
        spec.model_name = self.opt_string(map, "ModelName", path);
        if let Some(requirements) = self.required(map, "ComputeResourceRequirements", path) {
            let requirements_path = join(path, "ComputeResourceRequirements");
            if let Some(requirements_map) = self.object(requirements, &requirements_path) {
                let requirements = &mut spec.compute_resource_requirements;
                requirements.number_of_accelerator_devices_required =
                    self.opt_integer(requirements_map, "NumberOfAcceleratorDevicesRequired", &requirements_path);
                requirements.number_of_cpu_cores_required =
                    self.opt_number(requirements_map, "NumberOfCpuCoresRequired", &requirements_path);
                if let Some(memory) = self.required(requirements_map, "MinMemoryRequiredInMb", &requirements_path) {
                    requirements.min_memory_required_in_mb =
                        self.number(memory, &join(&requirements_path, "MinMemoryRequiredInMb"));
                }
            }
        }
        if let Some(config) = self.field(map, "SchedulingConfig") {
            let config_path = join(path, "SchedulingConfig");
            if let Some(config_map) = self.object(config, &config_path) {
                let mut scheduling = SchedulingConfig {
                    placement_strategy: self.opt_string(config_map, "PlacementStrategy", &config_path),
                    availability_zone_balance: None,
                };
                if let Some(balance) = self.field(config_map, "AvailabilityZoneBalance") {
                    let balance_path = join(&config_path, "AvailabilityZoneBalance");
                    if let Some(balance_map) = self.object(balance, &balance_path) {
                        scheduling.availability_zone_balance = Some(AvailabilityZoneBalance {
                            enforcement_mode: self.opt_string(balance_map, "EnforcementMode", &balance_path),
                            max_imbalance: self.opt_integer(balance_map, "MaxImbalance", &balance_path),
                        });
                    }
                }
                spec.scheduling_config = Some(scheduling);
            }
        }
        spec
    }

    fn fleet(&mut self, value: &Value, path: &str) -> Fleet {
        let mut fleet = Fleet::default();
        let Some(map) = self.object(value, path) else { return fleet };
        fleet.instances = self.list(map, "Instances", path, |reader, value, path| {
            let mut instance = FleetInstance::default();
            let Some(map) = reader.object(value, path) else { return instance };
            instance.instance_id = reader.req_string(map, "InstanceId", path);
            instance.instance_type = reader.req_string(map, "InstanceType", path);
            instance.availability_zone = reader.req_string(map, "AvailabilityZone", path);
            if let Some(flag) = reader.field(map, "Reserved") {
                instance.reserved = reader.boolean(flag, &join(path, "Reserved"));
            }
            instance.state = reader.opt_string(map, "State", path);
            instance
        });
        fleet.copies = self.list(map, "Copies", path, |reader, value, path| {
            let mut copy = FleetCopy { copy_count: 1.0, ..Default::default() };
            let Some(map) = reader.object(value, path) else { return copy };
            copy.inference_component_name = reader.req_string(map, "InferenceComponentName", path);
            copy.instance_id = reader.req_string(map, "InstanceId", path);
            copy.copy_count = reader.opt_integer(map, "CopyCount", path).unwrap_or(1.0);
            copy
        });
        fleet
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_name_every_path() {
        let text = r#"{"AvailabilityZones": ["a"], "Endpoint": {"InstancePools": [{"InstanceType": 3, "Priority": "one"}]},
            "InferenceComponents": [{"InferenceComponentName": "x", "RuntimeConfig": {"CopyCount": "four"}}]}"#;
        let error = scenario_from_json(text).unwrap_err();
        let messages: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            vec![
                "Endpoint.InstancePools[0].InstanceType: expected a string, found 3",
                "Endpoint.InstancePools[0].Priority: expected an integer, found \"one\"",
                "InferenceComponents[0].RuntimeConfig.CopyCount: expected an integer, found \"four\"",
            ]
        );
    }

    #[test]
    fn type_errors_shadow_only_their_own_follow_on_issues() {
        assert!(shadows("A.B", "A.B"));
        assert!(shadows("A.B", "A.B.C"));
        assert!(shadows("A[1]", "A[1].C"));
        assert!(shadows("A[1].Specification", "A[1]"));
        assert!(!shadows("A[1]", "A[10].C"));
        assert!(!shadows("A.InstancePools[5].Priority", "A.InstancePools"));
        assert!(!shadows("A.B", "A.BC"));
    }

    #[test]
    fn malformed_json_is_one_clear_error() {
        let error = scenario_from_json("{").unwrap_err();
        assert!(error.to_string().starts_with("malformed JSON"), "{error}");
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let text =
            r#"{"AvailabilityZones": ["a"], "Tags": [1], "Endpoint": {"InstanceType": "ml.g5.xlarge", "Foo": 1}}"#;
        let scenario = scenario_from_json(text).unwrap();
        assert_eq!(scenario.endpoint.instance_type.as_deref(), Some("ml.g5.xlarge"));
    }
}
