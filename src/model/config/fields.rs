//! Reading the fields of one `config.json` object: whole numbers, strings,
//! numbers and flags with the defaults of the family's Hugging Face config
//! class, and a message naming the field when one has the wrong type.

use serde_json::{Map, Value};

/// Reads the fields of one config.json object.
pub(super) struct Fields<'a>(pub(super) &'a Map<String, Value>);

impl Fields<'_> {
    pub(super) fn usize_or(&self, key: &str, default: Option<usize>) -> Result<usize, String> {
        match self.0.get(key) {
            Some(value) => value
                .as_u64()
                .map(|v| v as usize)
                .ok_or_else(|| format!("{key} is {value}, not a whole number")),
            None => default.ok_or_else(|| format!("missing field `{key}`")),
        }
    }

    pub(super) fn required(&self, key: &str) -> Result<usize, String> {
        self.usize_or(key, None)
    }

    pub(super) fn or(&self, key: &str, default: usize) -> Result<usize, String> {
        self.usize_or(key, Some(default))
    }

    pub(super) fn string(&self, key: &str) -> Result<Option<String>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(format!("{key} is {other}, not a string")),
        }
    }

    pub(super) fn float_or(&self, key: &str, default: f64) -> Result<f64, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(value) => value
                .as_f64()
                .ok_or_else(|| format!("{key} is {value}, not a number")),
        }
    }

    /// A number that `null` turns off: absent means `default`.
    pub(super) fn float_or_null(
        &self,
        key: &str,
        default: Option<f64>,
    ) -> Result<Option<f64>, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| format!("{key} is {value}, not a number")),
        }
    }

    /// A flag where `null` means `default`, as absent does.
    pub(super) fn bool_or_null(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            Some(Value::Null) => Ok(default),
            _ => self.bool_or(key, default),
        }
    }

    pub(super) fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(value) => value
                .as_bool()
                .ok_or_else(|| format!("{key} is {value}, not true or false")),
        }
    }

    /// `pad_token_id`: absent means the class default, `null` means none.
    pub(super) fn pad(&self, default: u32) -> Result<Option<u32>, String> {
        match self.0.get("pad_token_id") {
            None => Ok(Some(default)),
            Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .map(Some)
                .ok_or_else(|| format!("pad_token_id is {value}, not a token id")),
        }
    }
}
