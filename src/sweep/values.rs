//! How values are written as text, shared by every stage that writes them: parameter values in
//! tables and CSV cells, numbers without exponents, and the canonical JSON that is hashed.
//! A leaf module: it depends on nothing else in the sweep.

use serde_json::{Number, Value};

/// Plain text of a JSON number: integers as integers, floats in Rust's shortest round-trip
/// form (never an exponent).
pub fn number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        float_text(n.as_f64().unwrap_or(f64::NAN))
    }
}

pub fn float_text(x: f64) -> String {
    format!("{x}")
}

/// Significant digits of a float in `leaderboard.csv`.
pub const CSV_SIGNIFICANT_DIGITS: usize = 10;

/// A float rounded to `digits` significant digits, written in the shortest form that reads back
/// as that rounded value, never with an exponent (`1162.735249`, `0.00000015`).
pub fn float_sig(x: f64, digits: usize) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    // `{:e}` rounds the decimal expansion exactly (round half to even on the true binary
    // value), so the result is the same on every machine.
    let rounded: f64 = format!("{x:.prec$e}", prec = digits.saturating_sub(1))
        .parse()
        .unwrap_or(x);
    format!("{rounded}")
}

/// A JSON number for the CSV: integers exactly, floats to [`CSV_SIGNIFICANT_DIGITS`].
pub fn csv_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        float_sig(n.as_f64().unwrap_or(f64::NAN), CSV_SIGNIFICANT_DIGITS)
    }
}

/// JSON text with object keys sorted at every level: the canonical form that is hashed.
pub fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, &mut s);
    s
}

/// Text of a parameter value for tables and the CSV (strings unquoted).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => number_text(n),
        other => other.to_string(),
    }
}

/// A CSV cell: empty for a missing value or null, plain numbers (floats to
/// [`CSV_SIGNIFICANT_DIGITS`]: a spreadsheet keeps 15 and nobody reads 17; the JSON keeps them
/// whole), unquoted strings.
pub fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::Number(n)) => csv_number(n),
        Some(other) => value_text(other),
    }
}
