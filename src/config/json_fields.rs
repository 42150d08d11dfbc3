//! Typed, error-reporting access to the keys of one JSON object given by the user (engine args,
//! router config). Owns the wording of key errors: every message starts with the origin (a flag
//! such as `--extra-engine-args`, or a YAML key path) and names the key and what was expected.
//! It knows nothing about which keys exist; the parsers pass their own key tables.

use crate::error::InputError;
use serde_json::{Map, Value};

/// A key's state in the object: absent, explicitly `null`, or set to a valid value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Slot<T> {
    Absent,
    Null,
    Set(T),
}

impl<T> Slot<T> {
    /// The value if set; `None` when absent or null.
    pub(crate) fn value(self) -> Option<T> {
        match self {
            Slot::Set(v) => Some(v),
            Slot::Absent | Slot::Null => None,
        }
    }

    /// For keys where `null` means "unlimited"/"none": absent keeps `default`, null gives `None`.
    pub(crate) fn null_is_none(self, default: Option<T>) -> Option<T> {
        match self {
            Slot::Absent => default,
            Slot::Null => None,
            Slot::Set(v) => Some(v),
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        matches!(self, Slot::Set(_))
    }
}

/// Reader over one JSON object.
pub(crate) struct JsonObject<'a> {
    origin: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> JsonObject<'a> {
    /// `what` names the expected object in the error ("engine args", "router config").
    pub(crate) fn new(value: &'a Value, origin: &'a str, what: &str) -> Result<Self, InputError> {
        match value {
            Value::Object(map) => Ok(JsonObject { origin, map }),
            other => Err(InputError::new(format!(
                "{origin}: {what} must be a JSON object, got {}",
                describe(other)
            ))),
        }
    }

    pub(crate) fn origin(&self) -> &str {
        self.origin
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// Rejects the first (in sorted order) key not in `known`, suggesting the closest one.
    pub(crate) fn reject_unknown_keys(&self, known: &[&str]) -> Result<(), InputError> {
        for key in self.map.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let hint = match closest(key, known) {
                Some(k) => format!("; did you mean \"{k}\"?"),
                None => String::new(),
            };
            return Err(InputError::new(format!(
                "{}: unknown key \"{key}\"{hint} Valid keys: {}",
                self.origin,
                known.join(", ")
            )));
        }
        Ok(())
    }

    /// An error about `key` with a free-form explanation.
    pub(crate) fn error(&self, key: &str, msg: impl std::fmt::Display) -> InputError {
        InputError::new(format!("{}: key \"{key}\" {msg}", self.origin))
    }

    /// A key dynosim recognises but cannot simulate when it is set.
    pub(crate) fn unsupported(&self, key: &str, why: &str) -> InputError {
        InputError::new(format!(
            "{}: key \"{key}\" is not supported by dynosim yet ({why}); remove it or set it to null",
            self.origin
        ))
    }

    fn type_error(&self, key: &str, expected: &str, got: &Value) -> InputError {
        self.error(key, format!("must be {expected}, got {}", describe(got)))
    }

    fn slot(&self, key: &str) -> Slot<&'a Value> {
        match self.map.get(key) {
            None => Slot::Absent,
            Some(Value::Null) => Slot::Null,
            Some(v) => Slot::Set(v),
        }
    }

    /// Rejects an explicit `null` on a key that has no null meaning.
    pub(crate) fn non_null<T>(&self, key: &str, slot: Slot<T>) -> Result<Option<T>, InputError> {
        match slot {
            Slot::Null => Err(self.error(key, "must not be null")),
            Slot::Absent => Ok(None),
            Slot::Set(v) => Ok(Some(v)),
        }
    }

    /// An integer in `[min, max]`; floats such as `5.0` are rejected like upstream does.
    pub(crate) fn int(&self, key: &str, min: u64, max: u64) -> Result<Slot<u64>, InputError> {
        let expected = if max == u64::MAX {
            format!("an integer >= {min}")
        } else {
            format!("an integer in [{min}, {max}]")
        };
        match self.slot(key) {
            Slot::Absent => Ok(Slot::Absent),
            Slot::Null => Ok(Slot::Null),
            Slot::Set(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Slot::Set(n)),
                _ => Err(self.type_error(key, &expected, v)),
            },
        }
    }

    /// A finite number in `[min, max]` (integers accepted).
    pub(crate) fn float(&self, key: &str, min: f64, max: f64) -> Result<Slot<f64>, InputError> {
        let expected = if max == f64::INFINITY {
            format!("a finite number >= {min}")
        } else {
            format!("a number in [{min}, {max}]")
        };
        match self.slot(key) {
            Slot::Absent => Ok(Slot::Absent),
            Slot::Null => Ok(Slot::Null),
            Slot::Set(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= min && x <= max => Ok(Slot::Set(x)),
                _ => Err(self.type_error(key, &expected, v)),
            },
        }
    }

    pub(crate) fn bool(&self, key: &str) -> Result<Slot<bool>, InputError> {
        match self.slot(key) {
            Slot::Absent => Ok(Slot::Absent),
            Slot::Null => Ok(Slot::Null),
            Slot::Set(Value::Bool(b)) => Ok(Slot::Set(*b)),
            Slot::Set(v) => Err(self.type_error(key, "true or false", v)),
        }
    }

    pub(crate) fn string(&self, key: &str) -> Result<Slot<&'a str>, InputError> {
        match self.slot(key) {
            Slot::Absent => Ok(Slot::Absent),
            Slot::Null => Ok(Slot::Null),
            Slot::Set(Value::String(s)) => Ok(Slot::Set(s.as_str())),
            Slot::Set(v) => Err(self.type_error(key, "a string", v)),
        }
    }

    /// A string from `options`; returns the matching option.
    pub(crate) fn choice(
        &self,
        key: &str,
        options: &[&'static str],
        case_insensitive: bool,
    ) -> Result<Slot<&'static str>, InputError> {
        let expected = format!("one of {}", quoted_list(options));
        match self.slot(key) {
            Slot::Absent => Ok(Slot::Absent),
            Slot::Null => Ok(Slot::Null),
            Slot::Set(v) => {
                let found = v.as_str().and_then(|s| {
                    options.iter().copied().find(|o| {
                        if case_insensitive {
                            o.eq_ignore_ascii_case(s)
                        } else {
                            *o == s
                        }
                    })
                });
                match found {
                    Some(o) => Ok(Slot::Set(o)),
                    None => Err(self.type_error(key, &expected, v)),
                }
            }
        }
    }

    pub(crate) fn object(&self, key: &str) -> Result<Slot<&'a Map<String, Value>>, InputError> {
        match self.slot(key) {
            Slot::Absent => Ok(Slot::Absent),
            Slot::Null => Ok(Slot::Null),
            Slot::Set(Value::Object(m)) => Ok(Slot::Set(m)),
            Slot::Set(v) => Err(self.type_error(key, "a JSON object", v)),
        }
    }
}

/// Parses JSON text given on the command line; syntax errors name the flag, line and column.
pub(crate) fn parse_json_text(json: &str, flag: &str) -> Result<Value, InputError> {
    serde_json::from_str(json).map_err(|e| {
        InputError::new(format!(
            "{flag}: invalid JSON at line {} column {}: {}",
            e.line(),
            e.column(),
            strip_position(&e.to_string())
        ))
    })
}

/// serde_json appends " at line L column C" to its messages; we print the position ourselves.
fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

/// The known key closest to `key` by edit distance, if it is plausibly a typo of it.
pub(crate) fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let mut best: Option<(usize, &'k str)> = None;
    for &k in known {
        let d = strsim::levenshtein(key, k);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    let (d, k) = best?;
    let limit = (key.chars().count().max(k.chars().count()) / 3).max(2);
    if d <= limit || strsim::jaro_winkler(key, k) >= 0.9 {
        Some(k)
    } else {
        None
    }
}

/// `"a", "b" or "c"`.
pub(crate) fn quoted_list(options: &[&str]) -> String {
    let quoted: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// A short description of a JSON value for error messages.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string \"{s}\""),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn closest_finds_typos_and_ignores_unrelated_words() {
        let known = ["num_gpu_blocks", "block_size", "max_num_seqs"];
        assert_eq!(closest("num_gpu_block", &known), Some("num_gpu_blocks"));
        assert_eq!(closest("blocksize", &known), Some("block_size"));
        assert_eq!(closest("zzzzzzzzzzzz", &known), None);
    }

    #[test]
    fn json_syntax_error_names_flag_and_column() {
        let e = parse_json_text("{\"a\": }", "--router-config").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--router-config: invalid JSON at line 1 column 7"),
            "{e}"
        );
    }

    #[test]
    fn int_rejects_floats_negatives_and_out_of_range() {
        let v = json!({"a": 5.0, "b": -1, "c": 7, "d": null});
        let o = JsonObject::new(&v, "X", "thing").unwrap();
        assert!(o
            .int("a", 0, 10)
            .unwrap_err()
            .to_string()
            .contains("got number 5.0"));
        assert!(o.int("b", 0, 10).is_err());
        assert!(o
            .int("c", 0, 5)
            .unwrap_err()
            .to_string()
            .contains("an integer in [0, 5]"));
        assert_eq!(o.int("c", 0, 10).unwrap(), Slot::Set(7));
        assert_eq!(o.int("d", 0, 10).unwrap(), Slot::Null);
        assert_eq!(o.int("e", 0, 10).unwrap(), Slot::Absent);
    }

    #[test]
    fn quoted_list_reads_naturally() {
        assert_eq!(quoted_list(&["a"]), "\"a\"");
        assert_eq!(quoted_list(&["a", "b", "c"]), "\"a\", \"b\" or \"c\"");
    }
}
