//! Spec strings: `name:key=value,key=value`, the way governors and workloads are named on the
//! command line and in campaign files. Keys keep their order; a key given twice is an error.

use crate::error::{Result, SimError};

#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub params: Vec<(String, String)>,
}

impl Spec {
    /// Parse `text`; `what` ("governor", "workload") names the input in errors.
    pub fn parse(text: &str, what: &str) -> Result<Spec> {
        let text = text.trim();
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (text, None),
        };
        if name.is_empty() {
            return Err(SimError::config(
                what,
                "name",
                format!("empty {what} spec '{text}'; expected name:key=value,..."),
            ));
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for item in rest.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((k, v)) = item.split_once('=') else {
                return Err(SimError::config(format!("{what} '{name}'"), item, "expected key=value"));
            };
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            if params.iter().any(|(pk, _)| *pk == k) {
                return Err(SimError::config(format!("{what} '{name}'"), k, "given twice"));
            }
            params.push((k, v));
        }
        Ok(Spec { name: name.to_string(), params })
    }

    /// The canonical text form, used as a key in results.
    pub fn canonical(&self) -> String {
        if self.params.is_empty() {
            return self.name.clone();
        }
        let kv: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}:{}", self.name, kv.join(","))
    }
}

/// A knob a governor or workload accepts: its sysfs (or benchmark) name, unit, default and range.
#[derive(Clone, Debug)]
pub struct Knob {
    pub name: &'static str,
    pub unit: &'static str,
    pub default: f64,
    pub min: f64,
    pub max: f64,
    pub description: &'static str,
    /// Names accepted in place of numbers (`algorithm=pid`), each standing for a value.
    pub choices: &'static [(&'static str, f64)],
    /// Only whole numbers make sense (counts, enumerations).
    pub integer: bool,
    /// For a knob that stands for a constant not known exactly (an estimated or calibrated
    /// cost of a workload model): the range its true value is believed to lie in, and why.
    pub uncertainty: Option<Uncertainty>,
}

/// The range of an uncertain knob's value and where the range comes from (a measurement, a
/// published figure, an estimate), so that model variants can be drawn across it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Uncertainty {
    pub lo: f64,
    pub hi: f64,
    pub source: &'static str,
}

impl Knob {
    pub const fn new(
        name: &'static str,
        unit: &'static str,
        default: f64,
        min: f64,
        max: f64,
        description: &'static str,
    ) -> Knob {
        Knob { name, unit, default, min, max, description, choices: &[], integer: false, uncertainty: None }
    }

    /// A knob whose default is a constant known only to lie in `[lo, hi]`, for the reason
    /// `source` gives.
    pub const fn uncertain(mut self, lo: f64, hi: f64, source: &'static str) -> Knob {
        self.uncertainty = Some(Uncertainty { lo, hi, source });
        self
    }

    /// A knob that only takes whole numbers.
    pub const fn integer(mut self) -> Knob {
        self.integer = true;
        self
    }

    /// A knob whose values are named: `choices` maps each name to the number it stands for.
    pub const fn choices(mut self, choices: &'static [(&'static str, f64)]) -> Knob {
        self.choices = choices;
        self.integer = true;
        self
    }

    /// The name of a value, if the knob names its values.
    pub fn choice_name(&self, value: f64) -> Option<&'static str> {
        self.choices.iter().find(|(_, v)| *v == value).map(|(n, _)| *n)
    }
}

/// Values of a spec's parameters, checked against the knobs that the named thing declares.
#[derive(Clone, Debug)]
pub struct KnobValues {
    values: Vec<(&'static str, f64)>,
}

impl KnobValues {
    /// Check every parameter of `spec` against `knobs` (unknown names and out-of-range values are
    /// errors naming the knob) and fill in defaults. `extra` keys are passed through untouched
    /// for the caller to interpret (returned in order).
    pub fn resolve(
        spec: &Spec,
        knobs: &[Knob],
        what: &str,
        extra: &[&str],
    ) -> Result<(KnobValues, Vec<(String, String)>)> {
        let owner = format!("{what} '{}'", spec.name);
        let mut values: Vec<(&'static str, f64)> = knobs.iter().map(|k| (k.name, k.default)).collect();
        let mut passthrough = Vec::new();
        for (key, text) in &spec.params {
            if extra.contains(&key.as_str()) {
                passthrough.push((key.clone(), text.clone()));
                continue;
            }
            let Some(knob) = knobs.iter().find(|k| k.name == key) else {
                let mut known: Vec<&str> = knobs.iter().map(|k| k.name).collect();
                known.extend_from_slice(extra);
                let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                return Err(SimError::config(owner, key, format!("unknown tunable (known: {known})")));
            };
            let named = knob.choices.iter().find(|(n, _)| n.eq_ignore_ascii_case(text)).map(|(_, v)| *v);
            let value: f64 = named.or_else(|| text.parse().ok().filter(|v: &f64| v.is_finite())).ok_or_else(|| {
                let expected = if knob.choices.is_empty() {
                    format!("a number in {}", knob.unit)
                } else {
                    let names: Vec<&str> = knob.choices.iter().map(|(n, _)| *n).collect();
                    format!("one of {}", names.join(", "))
                };
                SimError::config(&owner, key, format!("expected {expected}, got '{text}'"))
            })?;
            if knob.integer && value.fract() != 0.0 {
                return Err(SimError::config(&owner, key, format!("expected a whole number, got {value}")));
            }
            if value < knob.min || value > knob.max {
                return Err(SimError::config(
                    &owner,
                    key,
                    format!("{value} is out of range [{}, {}] {}", knob.min, knob.max, knob.unit),
                ));
            }
            values.iter_mut().find(|(n, _)| *n == knob.name).expect("declared").1 = value;
        }
        Ok((KnobValues { values }, passthrough))
    }

    pub fn get(&self, name: &str) -> f64 {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("knob {name} is not declared"))
    }

    pub fn get_u64(&self, name: &str) -> u64 {
        self.get(name).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_params_in_order() {
        let s = Spec::parse("schedutil:rate_limit_us=2000, invariant=1", "governor").unwrap();
        assert_eq!(s.name, "schedutil");
        assert_eq!(s.params, vec![("rate_limit_us".into(), "2000".into()), ("invariant".into(), "1".into())]);
        assert_eq!(s.canonical(), "schedutil:rate_limit_us=2000,invariant=1");
    }

    #[test]
    fn rejects_malformed_and_duplicate_params() {
        assert!(Spec::parse("x:a", "governor").is_err());
        assert!(Spec::parse("x:a=1,a=2", "governor").is_err());
        assert!(Spec::parse(":a=1", "governor").is_err());
    }

    #[test]
    fn named_and_integer_knobs() {
        const CHOICES: &[(&str, f64)] = &[("load", 0.0), ("pid", 1.0)];
        let knobs = [
            Knob::new("algorithm", "enum", 0.0, 0.0, 1.0, "").choices(CHOICES),
            Knob::new("n", "", 1.0, 1.0, 9.0, "").integer(),
        ];
        let spec = Spec::parse("x:algorithm=PID,n=3", "governor").unwrap();
        let (v, _) = KnobValues::resolve(&spec, &knobs, "governor", &[]).unwrap();
        assert_eq!((v.get("algorithm"), v.get("n")), (1.0, 3.0));
        let bad = Spec::parse("x:algorithm=fast", "governor").unwrap();
        let err = KnobValues::resolve(&bad, &knobs, "governor", &[]).unwrap_err().to_string();
        assert!(err.contains("one of load, pid"), "{err}");
        let frac = Spec::parse("x:n=1.5", "governor").unwrap();
        assert!(KnobValues::resolve(&frac, &knobs, "governor", &[]).unwrap_err().to_string().contains("whole number"));
    }

    #[test]
    fn knob_values_check_names_and_ranges() {
        let knobs = [Knob::new("up_threshold", "%", 80.0, 1.0, 100.0, "load above which to go to max")];
        let ok = Spec::parse("ondemand:up_threshold=95", "governor").unwrap();
        let (v, _) = KnobValues::resolve(&ok, &knobs, "governor", &[]).unwrap();
        assert_eq!(v.get("up_threshold"), 95.0);
        let bad = Spec::parse("ondemand:up_threshold=101", "governor").unwrap();
        let err = KnobValues::resolve(&bad, &knobs, "governor", &[]).unwrap_err().to_string();
        assert!(err.contains("up_threshold") && err.contains("out of range"), "{err}");
        let unknown = Spec::parse("ondemand:foo=1", "governor").unwrap();
        let err = KnobValues::resolve(&unknown, &knobs, "governor", &[]).unwrap_err().to_string();
        assert!(err.contains("foo") && err.contains("unknown tunable"), "{err}");
    }
}
