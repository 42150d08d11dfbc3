//! The reference reader of one Mooncake row: parses it through `serde_json::Value`s, resolves
//! the field aliases and type-checks every field, with the exact `file:line` error of each way a
//! row can be wrong. The fast reader (`scan`) must give the same [`Row`] for every row it
//! accepts; this file knows nothing of sessions or of the workload being built.

use crate::error::InputError;
use crate::workload::formats::describe;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// A type-checked row (its hash ids are kept apart, in a buffer reused across lines).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub(super) output_length: u32,
    /// (field name used, value)
    pub(super) input_length: Option<(&'static str, u64)>,
    pub(super) timestamp: Option<f64>,
    pub(super) delay: Option<(&'static str, f64)>,
    pub(super) session_id: Option<String>,
    pub(super) priority: i32,
    pub(super) strict_priority: u32,
    /// Number of `output_token_ids`, when given.
    pub(super) output_ids: Option<u64>,
}

/// The known fields of a row as raw JSON values (`null` = absent), with the alias that was used.
#[derive(Default)]
struct RawRow {
    timestamp: Option<(&'static str, Value)>,
    input_length: Option<(&'static str, Value)>,
    output_length: Option<(&'static str, Value)>,
    delay: Option<(&'static str, Value)>,
    hash_ids: Option<Value>,
    session_id: Option<Value>,
    priority: Option<Value>,
    strict_priority: Option<Value>,
    output_token_ids: Option<Value>,
    /// First pair of keys naming the same field, if any.
    duplicate: Option<(&'static str, &'static str)>,
}

/// Canonical field of each known key (aliases share a slot).
pub(super) const KEYS: &[(&str, usize)] = &[
    ("timestamp", 0),
    ("created_time", 0),
    ("input_length", 1),
    ("input_tokens", 1),
    ("output_length", 2),
    ("output_tokens", 2),
    ("delay", 3),
    ("delay_ms", 3),
    ("hash_ids", 4),
    ("session_id", 5),
    ("priority", 6),
    ("strict_priority", 7),
    ("output_token_ids", 8),
];

impl<'de> de::Deserialize<'de> for RawRow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = RawRow;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (one trace row)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRow, A::Error> {
        let mut row = RawRow::default();
        let mut seen: [Option<&'static str>; 9] = [None; 9];
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let Some(&(name, slot)) = KEYS.iter().find(|(k, _)| *k == key) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let value: Value = map.next_value()?;
            if let Some(prev) = seen[slot] {
                row.duplicate.get_or_insert((prev, name));
                continue;
            }
            seen[slot] = Some(name);
            if value.is_null() {
                continue;
            }
            match slot {
                0 => row.timestamp = Some((name, value)),
                1 => row.input_length = Some((name, value)),
                2 => row.output_length = Some((name, value)),
                3 => row.delay = Some((name, value)),
                4 => row.hash_ids = Some(value),
                5 => row.session_id = Some(value),
                6 => row.priority = Some(value),
                7 => row.strict_priority = Some(value),
                _ => row.output_token_ids = Some(value),
            }
        }
        Ok(row)
    }
}

/// Reads rows of one file (`name`, for error messages) the reference way.
#[derive(Clone, Copy)]
pub(super) struct RowReader<'a> {
    pub(super) name: &'a str,
}

impl RowReader<'_> {
    /// An error at `name:line`.
    pub(super) fn err(&self, line: u64, msg: impl fmt::Display) -> InputError {
        InputError::new(format!("{}:{line}: {msg}", self.name))
    }

    /// Parses a line through `serde_json::Value`s and type-checks it: the reference behaviour,
    /// and the only source of row error messages (see `scan::fast_row`). Fills `ids`.
    pub(super) fn slow_row(
        &self,
        line_no: u64,
        line: &str,
        ids: &mut Vec<u64>,
    ) -> Result<Row, InputError> {
        let raw: RawRow = serde_json::from_str(line).map_err(|e| {
            // serde_json's position is within this one line: report only its column.
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let msg = full.strip_suffix(&suffix).unwrap_or(&full);
            let at = match e.column() {
                0 => String::new(),
                col => format!(" (column {col})"),
            };
            if e.is_data() {
                self.err(line_no, format_args!("{msg}{at}"))
            } else {
                self.err(
                    line_no,
                    format_args!("invalid JSON: {msg}{at}; each line must be one JSON object"),
                )
            }
        })?;
        if let Some((first, second)) = raw.duplicate {
            return Err(self.err(
                line_no,
                format_args!(
                    "fields \"{first}\" and \"{second}\" are the same field; give only one"
                ),
            ));
        }
        self.check_row(line_no, raw, ids)
    }

    /// Type-checks the known fields of a row; the hash ids go to `ids`.
    fn check_row(&self, line: u64, raw: RawRow, ids: &mut Vec<u64>) -> Result<Row, InputError> {
        let field_err = |key: &str, expected: &str, v: &Value| {
            self.err(
                line,
                format_args!(
                    "field \"{key}\": expected {expected}, found {}",
                    describe(v)
                ),
            )
        };
        let missing = |key: &str, expected: &str| {
            self.err(
                line,
                format_args!("missing required field \"{key}\" ({expected})"),
            )
        };

        ids.clear();
        match raw.hash_ids {
            None => {
                return Err(missing(
                    "hash_ids",
                    "a non-empty list of non-negative integers",
                ))
            }
            Some(Value::Array(items)) => {
                if items.is_empty() {
                    return Err(self.err(
                        line,
                        "field \"hash_ids\": expected a non-empty list of non-negative integers, \
                         found an empty list",
                    ));
                }
                ids.reserve(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item.as_u64() {
                        Some(id) => ids.push(id),
                        None => {
                            return Err(self.err(
                                line,
                                format_args!(
                                    "field \"hash_ids\": expected a non-empty list of \
                                     non-negative integers, element {i} is {}",
                                    describe(item)
                                ),
                            ))
                        }
                    }
                }
            }
            Some(v) => {
                return Err(field_err(
                    "hash_ids",
                    "a non-empty list of non-negative integers",
                    &v,
                ))
            }
        }

        let output_length = match raw.output_length {
            None => return Err(missing("output_length", "a non-negative integer")),
            Some((key, v)) => match v.as_u64() {
                Some(n) => u32::try_from(n).map_err(|_| {
                    self.err(
                        line,
                        format_args!("field \"{key}\": {n} is too large (at most {})", u32::MAX),
                    )
                })?,
                None => return Err(field_err(key, "a non-negative integer", &v)),
            },
        };

        let input_length = match raw.input_length {
            None => None,
            Some((key, v)) => match v.as_u64() {
                Some(n) => Some((key, n)),
                None => return Err(field_err(key, "a non-negative integer", &v)),
            },
        };

        let timestamp = match raw.timestamp {
            None => None,
            Some((key, v)) => match v.as_f64() {
                Some(t) if v.is_number() && t.is_finite() => Some(t),
                _ => return Err(field_err(key, "a number (milliseconds)", &v)),
            },
        };

        let delay = match raw.delay {
            None => None,
            Some((key, v)) => match v.as_f64() {
                Some(d) if v.is_number() && d.is_finite() && d >= 0.0 => Some((key, d)),
                _ => return Err(field_err(key, "a non-negative number (milliseconds)", &v)),
            },
        };

        let session_id = match raw.session_id {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(v) => return Err(field_err("session_id", "a string", &v)),
        };

        let priority = match raw.priority {
            None => 0,
            Some(v) => match v.as_i64().and_then(|p| i32::try_from(p).ok()) {
                Some(p) => p,
                None => return Err(field_err("priority", "a 32-bit signed integer", &v)),
            },
        };

        let strict_priority = match raw.strict_priority {
            None => 0,
            Some(v) => match v.as_u64().and_then(|p| u32::try_from(p).ok()) {
                Some(p) => p,
                None => {
                    return Err(field_err(
                        "strict_priority",
                        "a 32-bit non-negative integer",
                        &v,
                    ))
                }
            },
        };

        let output_ids = match raw.output_token_ids {
            None => None,
            Some(Value::Array(items)) => {
                if let Some((i, item)) = items
                    .iter()
                    .enumerate()
                    .find(|(_, t)| t.as_u64().is_none_or(|t| t > u64::from(u32::MAX)))
                {
                    return Err(self.err(
                        line,
                        format_args!(
                            "field \"output_token_ids\": expected a list of token ids (integers \
                             from 0 to {}), element {i} is {}",
                            u32::MAX,
                            describe(item)
                        ),
                    ));
                }
                Some(items.len() as u64)
            }
            Some(v) => {
                return Err(field_err(
                    "output_token_ids",
                    "a list of token ids (integers)",
                    &v,
                ))
            }
        };

        Ok(Row {
            output_length,
            input_length,
            timestamp,
            delay,
            session_id,
            priority,
            strict_priority,
            output_ids,
        })
    }
}
