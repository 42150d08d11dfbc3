//! The fast reader of Mooncake rows: reads a well-formed row into a typed [`Row`] without
//! building `serde_json::Value`s (a hand-written scanner for the usual shape, serde for the
//! rest), and gives up on anything else so that the reference reader (`RowReader`) words the
//! error. It never reports an error and knows nothing of sessions.

use super::rows::{Row, KEYS};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Number;
use std::fmt;

/// Fast path: parses a line into typed fields without building `serde_json::Value`s (nothing is
/// allocated per field or per hash id; the ids go to `ids`). It never reports an error: `None`
/// means "not plainly a valid row" (invalid JSON, not an object, two names of one field, `null`,
/// non-list or empty `hash_ids`, an id that is not a u64, a field of the wrong type or out of
/// range, ...), and the caller then re-parses the line with `RowReader::slow_row`, which
/// gives the exact error. A returned row is the one the slow path gives: scalars are read as
/// [`Number`] (what a `Value` holds) and converted exactly as in `RowReader::check_row`.
///
/// Lines in the usual shape (known fields only, plain integers, strings without escapes) are
/// read by the hand-written [`scan_row`]; any other line by serde (see [`serde_row`]).
pub(super) fn fast_row(line: &str, ids: &mut Vec<u64>) -> Option<Row> {
    let raw = match scan_row(line, ids) {
        Some(raw) => raw,
        None => serde_row(line, ids)?,
    };
    raw.into_row(ids)
}

/// Reads a line with serde into typed fields (see [`FastRowSeed`]), else `None`. Appends the
/// hash ids to `ids` (cleared first).
pub(super) fn serde_row(line: &str, ids: &mut Vec<u64>) -> Option<FastRaw> {
    ids.clear();
    let mut de = serde_json::Deserializer::from_str(line);
    let raw = FastRowSeed { ids: &mut *ids }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(raw)
}

/// The known fields of a row as read by [`fast_row`] (`null` = absent).
#[derive(Default)]
pub(super) struct FastRaw {
    timestamp: Option<Number>,
    input_length: Option<(&'static str, Number)>,
    output_length: Option<Number>,
    delay: Option<(&'static str, Number)>,
    /// `hash_ids` was given (as a list; its ids are in the seed's buffer).
    has_ids: bool,
    session_id: Option<String>,
    priority: Option<Number>,
    strict_priority: Option<Number>,
    /// Number of `output_token_ids` (each a u32), when given.
    output_ids: Option<u64>,
}

impl FastRaw {
    /// The checks of `RowReader::check_row`, for rows that pass them.
    pub(super) fn into_row(self, ids: &[u64]) -> Option<Row> {
        if !self.has_ids || ids.is_empty() {
            return None;
        }
        let output_length = u32::try_from(self.output_length?.as_u64()?).ok()?;
        let input_length = match self.input_length {
            None => None,
            Some((key, n)) => Some((key, n.as_u64()?)),
        };
        let timestamp = match self.timestamp {
            None => None,
            Some(n) => Some(n.as_f64().filter(|t| t.is_finite())?),
        };
        let delay = match self.delay {
            None => None,
            Some((key, n)) => Some((key, n.as_f64().filter(|d| d.is_finite() && *d >= 0.0)?)),
        };
        let priority = match self.priority {
            None => 0,
            Some(n) => i32::try_from(n.as_i64()?).ok()?,
        };
        let strict_priority = match self.strict_priority {
            None => 0,
            Some(n) => u32::try_from(n.as_u64()?).ok()?,
        };
        Some(Row {
            output_length,
            input_length,
            timestamp,
            delay,
            session_id: self.session_id,
            priority,
            strict_priority,
            output_ids: self.output_ids,
        })
    }
}

/// Reads a line in the usual shape, else `None` (then [`FastRowSeed`] takes over): one object
/// of known, unescaped keys, each at most once, whose values are `null`, a number (a plain
/// non-negative integer is read here, any other number token by serde as a lone [`Number`]),
/// an unescaped string (`session_id`) or a list of plain non-negative integers (`hash_ids`),
/// with JSON whitespace anywhere between tokens. Appends the hash ids to `ids` (cleared first).
pub(super) fn scan_row(line: &str, ids: &mut Vec<u64>) -> Option<FastRaw> {
    ids.clear();
    let mut sc = Scan { s: line, pos: 0 };
    let mut row = FastRaw::default();
    let mut seen = [false; 9];
    sc.ws();
    sc.eat(b'{')?;
    sc.ws();
    if sc.eat(b'}').is_none() {
        loop {
            sc.eat(b'"')?;
            let key = sc.plain_str()?;
            let &(name, slot) = KEYS.iter().find(|(k, _)| *k == key)?;
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            sc.ws();
            sc.eat(b':')?;
            sc.ws();
            match slot {
                0 => row.timestamp = sc.nullable_number()?,
                1 => row.input_length = sc.nullable_number()?.map(|n| (name, n)),
                2 => row.output_length = sc.nullable_number()?,
                3 => row.delay = sc.nullable_number()?.map(|n| (name, n)),
                4 => {
                    sc.eat(b'[')?;
                    sc.ws();
                    if sc.eat(b']').is_none() {
                        loop {
                            ids.push(sc.plain_u64()?);
                            sc.ws();
                            if sc.eat(b']').is_some() {
                                break;
                            }
                            sc.eat(b',')?;
                            sc.ws();
                        }
                    }
                    row.has_ids = true;
                }
                5 => {
                    row.session_id = if sc.null() {
                        None
                    } else {
                        sc.eat(b'"')?;
                        Some(sc.plain_str()?.to_owned())
                    }
                }
                6 => row.priority = sc.nullable_number()?,
                7 => row.strict_priority = sc.nullable_number()?,
                // Rare: read by serde (`FastRowSeed`).
                _ => return None,
            }
            sc.ws();
            if sc.eat(b'}').is_some() {
                break;
            }
            sc.eat(b',')?;
            sc.ws();
        }
    }
    sc.ws();
    (sc.pos == line.len()).then_some(row)
}

/// A byte cursor over one line, for [`scan_row`].
struct Scan<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.as_bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// Consumes `c` if it is next.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.s.as_bytes().get(self.pos) == Some(&c)).then(|| self.pos += 1)
    }

    /// Consumes a `null` literal if it is next.
    fn null(&mut self) -> bool {
        let found = self.s.as_bytes()[self.pos..].starts_with(b"null");
        if found {
            self.pos += 4;
        }
        found
    }

    /// The rest of a string (its opening quote consumed) when it has no escape and no control
    /// character (serde rejects those), consuming the closing quote.
    fn plain_str(&mut self) -> Option<&'a str> {
        let start = self.pos;
        loop {
            match *self.s.as_bytes().get(self.pos)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        Some(&self.s[start..self.pos - 1])
    }

    /// The longest run of bytes that can occur in a JSON number.
    fn number_token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') =
            self.s.as_bytes().get(self.pos)
        {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    /// A run of digits without a leading zero that fits a u64: what serde hands to `visit_u64`
    /// (`-0`, fractions, exponents and overflows are floats or errors). Whatever follows the
    /// digits is left to the caller, which accepts only a delimiter or whitespace there.
    fn plain_u64(&mut self) -> Option<u64> {
        let bytes = &self.s.as_bytes()[self.pos..];
        let mut n = 0u64;
        let mut len = 0;
        while let Some(&b) = bytes.get(len) {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            n = n.checked_mul(10)?.checked_add(u64::from(digit))?;
            len += 1;
        }
        if len == 0 || (len > 1 && bytes[0] == b'0') {
            return None;
        }
        self.pos += len;
        Some(n)
    }

    /// `null` (as `Some(None)`) or a number. Serde reads a number token on its own exactly as in
    /// context: its number grammar stops at the first byte that cannot continue the number, and
    /// the token ends at such a byte (or is rejected).
    fn nullable_number(&mut self) -> Option<Option<Number>> {
        if self.null() {
            return Some(None);
        }
        let start = self.pos;
        if let Some(n) = self.plain_u64() {
            if !matches!(
                self.s.as_bytes().get(self.pos),
                Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            ) {
                return Some(Some(Number::from(n)));
            }
            self.pos = start;
        }
        let token = self.number_token();
        serde_json::from_str::<Number>(token).ok().map(Some)
    }
}

/// Reads one row for [`fast_row`]; any surprise is an error (the slow path takes over).
struct FastRowSeed<'a> {
    ids: &'a mut Vec<u64>,
}

impl<'de> DeserializeSeed<'de> for FastRowSeed<'_> {
    type Value = FastRaw;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FastRaw, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FastRowSeed<'_> {
    type Value = FastRaw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (one trace row)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastRaw, A::Error> {
        let ids = self.ids;
        let mut row = FastRaw::default();
        let mut seen = [false; 9];
        while let Some(KnownKey(key)) = map.next_key()? {
            let Some((name, slot)) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(de::Error::custom("duplicate field"));
            }
            match slot {
                0 => row.timestamp = map.next_value()?,
                1 => row.input_length = map.next_value::<Option<Number>>()?.map(|n| (name, n)),
                2 => row.output_length = map.next_value()?,
                3 => row.delay = map.next_value::<Option<Number>>()?.map(|n| (name, n)),
                4 => {
                    map.next_value_seed(IdsSeed(&mut *ids))?;
                    row.has_ids = true;
                }
                5 => row.session_id = map.next_value()?,
                6 => row.priority = map.next_value()?,
                7 => row.strict_priority = map.next_value()?,
                _ => row.output_ids = map.next_value_seed(TokenCount)?,
            }
        }
        Ok(row)
    }
}

/// A map key: its entry in [`KEYS`], or `None` for an unknown field (read without allocating).
struct KnownKey(Option<(&'static str, usize)>);

impl<'de> de::Deserialize<'de> for KnownKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KnownKeyVisitor)
    }
}

struct KnownKeyVisitor;

impl Visitor<'_> for KnownKeyVisitor {
    type Value = KnownKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KnownKey, E> {
        Ok(KnownKey(KEYS.iter().find(|(k, _)| *k == key).copied()))
    }
}

/// Appends a JSON list of u64s to the buffer; anything else (including `null`) is an error.
struct IdsSeed<'a>(&'a mut Vec<u64>);

impl<'de> DeserializeSeed<'de> for IdsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for IdsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of non-negative integers")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(Id(id)) = seq.next_element()? {
            self.0.push(id);
        }
        Ok(())
    }
}

/// `null`, or a list of `u32` token ids read as their number (nothing allocated).
struct TokenCount;

impl<'de> DeserializeSeed<'de> for TokenCount {
    type Value = Option<u64>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for TokenCount {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of token ids")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
        let mut n = 0u64;
        while let Some(Id(id)) = seq.next_element()? {
            if id > u64::from(u32::MAX) {
                return Err(de::Error::custom("token id out of range"));
            }
            n += 1;
        }
        Ok(Some(n))
    }
}

/// A JSON integer that `Value::as_u64` accepts: only `visit_u64` succeeds.
struct Id(u64);

impl<'de> de::Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id(v))
    }
}
