//! The target-tracking policy (`scaling_policy`): the metric-math expression it emits, evaluated
//! on sample datapoints by a small evaluator of that expression language, gives the metrics
//! module's weighted utilisation; and its request fields and input checks.

use std::collections::BTreeMap;

use fleetplan::metrics::{
    metric_math_utilisation, scaling_policy, ConcurrencyMetric, MetricsError, TargetTracking, TypeLoad,
};
use fleetplan::Problem;
use serde_json::Value;

const FRAGMENTED: &str = include_str!("../scenarios/fragmented-fleet.json");

/// The measured maxima of the fragmented fleet's three pool types.
fn maxima() -> BTreeMap<String, f64> {
    [("ml.p5.48xlarge", 20.0), ("ml.g6e.48xlarge", 12.5), ("ml.g6.48xlarge", 8.0)]
        .into_iter()
        .map(|(name, max)| (name.to_string(), max))
        .collect()
}

fn problem() -> Problem {
    Problem::from_json(FRAGMENTED).expect("bundled scenario")
}

/// The request as the JSON the API receives.
fn policy_json(problem: &Problem, tracking: &TargetTracking) -> Value {
    let request = scaling_policy(problem, &maxima(), tracking, &ConcurrencyMetric::default()).expect("valid inputs");
    serde_json::to_value(request).expect("serialisable")
}

/// A CloudWatch metric-math subset: numbers, query ids, `+ - * /`, parentheses and
/// `FILL(expression, number)`. A missing datapoint (`None`) makes arithmetic missing; `FILL`
/// replaces it.
struct Evaluator<'a> {
    tokens: Vec<String>,
    next: usize,
    datapoints: &'a BTreeMap<String, Option<f64>>,
}

impl<'a> Evaluator<'a> {
    fn evaluate(expression: &str, datapoints: &'a BTreeMap<String, Option<f64>>) -> Option<f64> {
        let mut tokens = Vec::new();
        let mut word = String::new();
        for character in expression.chars() {
            if character.is_ascii_alphanumeric() || character == '_' || character == '.' {
                word.push(character);
                continue;
            }
            if !word.is_empty() {
                tokens.push(std::mem::take(&mut word));
            }
            if !character.is_whitespace() {
                tokens.push(character.to_string());
            }
        }
        if !word.is_empty() {
            tokens.push(word);
        }
        let mut evaluator = Evaluator { tokens, next: 0, datapoints };
        let value = evaluator.sum();
        assert_eq!(evaluator.next, evaluator.tokens.len(), "trailing tokens in {expression}");
        value
    }

    fn take(&mut self) -> String {
        let token = self.tokens.get(self.next).cloned().unwrap_or_default();
        self.next += 1;
        token
    }

    fn peek(&self) -> &str {
        self.tokens.get(self.next).map_or("", String::as_str)
    }

    fn sum(&mut self) -> Option<f64> {
        let mut value = self.product();
        while matches!(self.peek(), "+" | "-") {
            let operator = self.take();
            let right = self.product();
            value = match (value, right) {
                (Some(left), Some(right)) if operator == "+" => Some(left + right),
                (Some(left), Some(right)) => Some(left - right),
                _ => None,
            };
        }
        value
    }

    fn product(&mut self) -> Option<f64> {
        let mut value = self.factor();
        while matches!(self.peek(), "*" | "/") {
            let operator = self.take();
            let right = self.factor();
            value = match (value, right) {
                (Some(left), Some(right)) if operator == "*" => Some(left * right),
                // CloudWatch gives no datapoint for a division by zero.
                (Some(_), Some(0.0)) => None,
                (Some(left), Some(right)) => Some(left / right),
                _ => None,
            };
        }
        value
    }

    fn factor(&mut self) -> Option<f64> {
        let token = self.take();
        if token == "(" {
            let value = self.sum();
            assert_eq!(self.take(), ")");
            return value;
        }
        if token == "FILL" {
            assert_eq!(self.take(), "(");
            let value = self.sum();
            assert_eq!(self.take(), ",");
            let fill: f64 = self.take().parse().expect("FILL's value is a number");
            assert_eq!(self.take(), ")");
            return Some(value.unwrap_or(fill));
        }
        if let Ok(number) = token.parse::<f64>() {
            return Some(number);
        }
        *self.datapoints.get(&token).unwrap_or_else(|| panic!("unknown query id {token}"))
    }
}

/// Observed concurrency per type (`None`: the type has no instances, so no datapoint).
fn recompute(policy: &Value, observed: &BTreeMap<&str, Option<f64>>) -> Option<f64> {
    let queries = policy["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]["Metrics"]
        .as_array()
        .expect("Metrics");
    let mut datapoints = BTreeMap::new();
    let mut expression = None;
    for query in queries {
        let id = query["Id"].as_str().expect("Id").to_string();
        if let Some(text) = query["Expression"].as_str() {
            assert_eq!(query["ReturnData"], Value::Bool(true));
            expression = Some(text.to_string());
            continue;
        }
        assert_eq!(query["ReturnData"], Value::Bool(false));
        let stat = &query["MetricStat"];
        assert_eq!(stat["Stat"], "Average");
        let dimensions = stat["Metric"]["Dimensions"].as_array().expect("Dimensions");
        let instance_type = dimensions
            .iter()
            .find(|dimension| dimension["Name"] == "InstanceType")
            .and_then(|dimension| dimension["Value"].as_str())
            .expect("an InstanceType dimension");
        datapoints.insert(id, *observed.get(instance_type).expect("a sample for every pool type"));
    }
    Evaluator::evaluate(&expression.expect("one expression"), &datapoints)
}

fn loads(observed: &BTreeMap<&str, Option<f64>>) -> Vec<TypeLoad> {
    maxima()
        .iter()
        .map(|(name, &max)| match observed[name.as_str()] {
            Some(concurrency) => TypeLoad::new(name, 1, concurrency, max),
            None => TypeLoad::new(name, 0, 0.0, max),
        })
        .collect()
}

#[test]
fn the_expression_on_sample_datapoints_is_the_metric_math_utilisation() {
    let policy = policy_json(&problem(), &TargetTracking::default());
    let samples: [[Option<f64>; 3]; 5] = [
        [Some(18.0), Some(9.0), Some(7.0)],
        [Some(0.0), Some(0.0), Some(0.0)],
        [Some(12.0), None, Some(8.0)],
        [None, None, Some(10.0)],
        [Some(25.0), Some(12.5), None],
    ];
    for sample in samples {
        let observed: BTreeMap<&str, Option<f64>> =
            ["ml.p5.48xlarge", "ml.g6e.48xlarge", "ml.g6.48xlarge"].into_iter().zip(sample).collect();
        let recomputed = recompute(&policy, &observed).expect("a datapoint while some type reports");
        let expected = metric_math_utilisation(&loads(&observed)).expect("valid loads");
        assert!((recomputed - expected).abs() < 1e-12, "{sample:?}: expression {recomputed}, metrics {expected}");
    }
}

#[test]
fn no_datapoint_when_no_type_reports_as_the_metrics_module_has_no_utilisation() {
    let policy = policy_json(&problem(), &TargetTracking::default());
    let observed: BTreeMap<&str, Option<f64>> =
        ["ml.p5.48xlarge", "ml.g6e.48xlarge", "ml.g6.48xlarge"].into_iter().map(|name| (name, None)).collect();
    assert_eq!(recompute(&policy, &observed), None);
    assert_eq!(metric_math_utilisation(&loads(&observed)), Err(MetricsError::NoInstances));
}

#[test]
fn the_request_targets_the_endpoint_variant_with_the_scenario_cooldowns() {
    let problem = problem();
    let tracking = TargetTracking { target: 0.65, ..TargetTracking::for_problem(&problem) };
    let policy = policy_json(&problem, &tracking);
    let endpoint = problem.endpoint_name();
    assert_eq!(policy["ServiceNamespace"], "sagemaker");
    assert_eq!(policy["PolicyType"], "TargetTrackingScaling");
    assert_eq!(policy["ScalableDimension"], "sagemaker:variant:DesiredInstanceCount");
    assert_eq!(policy["ResourceId"], format!("endpoint/{endpoint}/variant/{}", problem.variant_name()));
    let configuration = &policy["TargetTrackingScalingPolicyConfiguration"];
    assert_eq!(configuration["TargetValue"], 0.65);
    assert_eq!(configuration["ScaleInCooldown"], tracking.scale_in_cooldown);
    assert_eq!(configuration["ScaleOutCooldown"], tracking.scale_out_cooldown);
    let queries = configuration["CustomizedMetricSpecification"]["Metrics"].as_array().expect("Metrics");
    assert_eq!(queries.len(), 4, "one query per pool type and the expression");
    assert_eq!(queries.iter().filter(|query| query["ReturnData"] == true).count(), 1);
}

#[test]
fn every_pool_type_needs_a_positive_maximum_and_no_other_type_may_have_one() {
    let problem = problem();
    let check = |maxima: &BTreeMap<String, f64>| {
        scaling_policy(&problem, maxima, &TargetTracking::default(), &ConcurrencyMetric::default()).map(|_| ())
    };
    let mut missing = maxima();
    missing.remove("ml.g6.48xlarge");
    assert_eq!(check(&missing), Err(MetricsError::MissingMaximum { instance_type: "ml.g6.48xlarge".to_string() }));
    let mut extra = maxima();
    extra.insert("ml.g5.xlarge".to_string(), 4.0);
    assert_eq!(check(&extra), Err(MetricsError::NotAPoolType { instance_type: "ml.g5.xlarge".to_string() }));
    let mut zero = maxima();
    zero.insert("ml.p5.48xlarge".to_string(), 0.0);
    assert!(matches!(check(&zero), Err(MetricsError::ZeroMaximum { .. })));
    let mut not_finite = maxima();
    not_finite.insert("ml.p5.48xlarge".to_string(), f64::NAN);
    assert!(matches!(check(&not_finite), Err(MetricsError::NotFinite { .. })));
    let wrong_target = TargetTracking { target: 1.5, ..TargetTracking::default() };
    assert!(matches!(
        scaling_policy(&problem, &maxima(), &wrong_target, &ConcurrencyMetric::default()),
        Err(MetricsError::Setting { field: "Target", .. })
    ));
}
